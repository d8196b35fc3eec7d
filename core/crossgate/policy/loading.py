"""Policy files (YAML or TOML) and the environment variable that names one; the format is in docs/policy.md."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from crossgate.errors import ConfigurationError
from crossgate.fingerprint import MAX_JSON_DEPTH
from crossgate.model import FRAMEWORKS
from crossgate.policy.claude import import_claude_settings
from crossgate.policy.langchain import import_interrupt_on
from crossgate.policy.rules import ArgCondition, Policy, PolicyRule

POLICY_ENV = "CROSSGATE_POLICY"
"""The environment variable naming the policy file when no path is given."""

FORMAT_VERSION = 1

_POLICY_KEYS = (
    "context_keys",
    "default",
    "default_reason",
    "default_allowed_decisions",
    "default_timeout_seconds",
    "default_apply_within_seconds",
)
_TOP_KEYS = frozenset({"version", "rules", "claude_permissions", "langchain_interrupt_on", *_POLICY_KEYS})
_CLAUDE_OPTIONS = frozenset({"root", "cwd", "home", "frameworks", "settings_file"})
_CONDITION_KINDS = ("glob", "path", "regex", "equals", "one_of", "present", "absent")


def resolve_policy(path: str | os.PathLike[str] | None = None) -> Policy:
    """The policy in ``path``, else in the file ``$CROSSGATE_POLICY`` names, else the default ``Policy()``."""
    chosen = path if path not in (None, "") else os.environ.get(POLICY_ENV, "")
    if not chosen:
        return Policy()
    return load_policy(chosen)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a policy file: ``.yaml``/``.yml``, ``.toml`` or ``.json``, chosen by the extension."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml", ".json"):
        raise ConfigurationError(
            f"{file}: unknown policy file type {suffix or '(none)'}; use .yaml, .yml, .toml or .json"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{file}: cannot read the policy file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{file}: not UTF-8 text: {exc}") from exc
    data = _parse(text, suffix, file)
    return policy_from_dict({} if data is None else data, source=str(file), base_dir=Path(os.path.abspath(file)).parent)


def policy_from_dict(data: Mapping[str, Any], *, source: str = "policy", base_dir: Path | None = None) -> Policy:
    """Build a policy from parsed file data; errors name ``source`` and the field.

    ``base_dir`` resolves relative paths inside the data (``claude_permissions.root`` and ``settings_file``);
    it defaults to the current directory.
    """
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    unknown = sorted(str(k) for k in set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{source}: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(_TOP_KEYS))}"
        )
    version = data.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ConfigurationError(
            f"{source}: version: this crossgate reads policy format {FORMAT_VERSION}, not {version!r}"
        )
    base = base_dir or Path.cwd()
    rules = _rules(data.get("rules", []), source)
    if "claude_permissions" in data:
        rules += _claude_rules(data["claude_permissions"], source, base)
    if "langchain_interrupt_on" in data:
        rules += _with_source(source, "langchain_interrupt_on", import_interrupt_on, data["langchain_interrupt_on"])
    settings = {key: data[key] for key in _POLICY_KEYS if key in data}
    try:
        return Policy(rules=tuple(rules), **settings)
    except ValidationError as exc:
        raise ConfigurationError(f"{source}: {_describe(exc)}") from None


POLICY_DEPTH = MAX_JSON_DEPTH + 8
"""How deep a policy file may nest: a condition's value may be as deep as arguments, plus the file's own levels."""


def _parse(text: str, suffix: str, file: Path) -> Any:
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text, object_pairs_hook=_JsonObject)
        else:
            data = yaml.load(text, Loader=_StrictLoader)
        _refuse_deep_nesting(data, file)
        if suffix == ".json":
            _refuse_repeated_keys(data, str(file))
        return data
    except RecursionError:
        raise ConfigurationError(f"{file}: nested more than {POLICY_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{file}: not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{file}: not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{file}: not valid YAML: {_one_line(str(exc))}") from None


def _refuse_deep_nesting(data: Any, file: Path) -> None:
    # Iterative, so a file nested thousands deep is refused here rather than overflowing a later recursion.
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > POLICY_DEPTH:
            raise ConfigurationError(f"{file}: nested more than {POLICY_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a repeated key (which would silently drop the first one's rules)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"repeated key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _JsonObject(dict[str, Any]):
    """A parsed JSON object that remembers the keys it saw twice (``json`` keeps only the last silently)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated = [key for index, (key, _) in enumerate(pairs) if any(k == key for k, _ in pairs[:index])]


def _refuse_repeated_keys(value: Any, where: str, *, item: bool = True) -> None:
    """Raise for the first object with a repeated key, naming where it is (a rule by index and name).

    ``item`` says ``where`` ends at the file or at a list item (``rules[0] (name)``), so a key follows as
    ``: key``; below a key it follows as ``.key``.
    """
    if isinstance(value, list):
        for index, element in enumerate(value):
            _refuse_repeated_keys(element, f"{where}[{index}]")
    elif isinstance(value, _JsonObject):
        name = value.get("name")
        if item and where.endswith("]") and isinstance(name, str):
            where += f" ({name})"
        if value.repeated:
            raise ConfigurationError(
                f"{where}: repeated key {value.repeated[0]!r}; JSON would silently keep only the last one"
            )
        for key, element in value.items():
            _refuse_repeated_keys(element, f"{where}: {key}" if item else f"{where}.{key}", item=False)


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _rules(items: Any, source: str) -> list[PolicyRule]:
    if not isinstance(items, list):
        raise ConfigurationError(f"{source}: rules must be a list, got {type(items).__name__}")
    rules = []
    for index, item in enumerate(items):
        where = f"{source}: rules[{index}]"
        if not isinstance(item, Mapping):
            raise ConfigurationError(f"{where}: expected a mapping, got {type(item).__name__}")
        if isinstance(item.get("name"), str):
            where += f" ({item['name']})"
        fields = dict(item)
        for key in ("where", "context"):
            if key in fields:
                fields[key] = _conditions(fields[key], where, key)
        try:
            rules.append(PolicyRule.model_validate(fields))
        except ValidationError as exc:
            raise ConfigurationError(f"{where}: {_describe(exc)}") from None
    return rules


def _conditions(value: Any, where: str, key: str = "where") -> list[ArgCondition]:
    """``where`` (or ``context``) as a list of conditions, or as a mapping of name to glob (``{command: "rm *"}``)."""
    if isinstance(value, Mapping):
        value = [{"arg": arg, "glob": pattern} for arg, pattern in value.items()]
    if not isinstance(value, list):
        raise ConfigurationError(f"{where}: {key} must be a list of conditions or a mapping of name to glob")
    return [_condition(item, f"{where}: {key}[{index}]") for index, item in enumerate(value)]


def _condition(item: Any, where: str) -> ArgCondition:
    if not isinstance(item, Mapping):
        raise ConfigurationError(f"{where}: expected a mapping, got {type(item).__name__}")
    fields = dict(item)
    shorthand = [kind for kind in _CONDITION_KINDS if kind in fields]
    if shorthand:
        if len(shorthand) > 1 or "kind" in fields:
            raise ConfigurationError(
                f"{where}: give one of {', '.join(_CONDITION_KINDS)} (found {', '.join(shorthand)})"
            )
        kind = shorthand[0]
        operand = fields.pop(kind)
        fields["kind"] = kind
        if kind in ("glob", "path", "regex"):
            fields["pattern"] = operand
        elif kind == "equals":
            fields["value"] = operand
        elif kind == "one_of":
            fields["values"] = operand
        elif operand is not True:
            raise ConfigurationError(f"{where}: write {kind}: true")
    try:
        return ArgCondition.model_validate(fields)
    except ValidationError as exc:
        raise ConfigurationError(f"{where}: {_describe(exc)}") from None


def _claude_rules(block: Any, source: str, base: Path) -> list[PolicyRule]:
    where = f"{source}: claude_permissions"
    if not isinstance(block, Mapping):
        raise ConfigurationError(f"{where}: expected a mapping, got {type(block).__name__}")
    options = {key: block[key] for key in _CLAUDE_OPTIONS if key in block}
    permissions = {key: value for key, value in block.items() if key not in _CLAUDE_OPTIONS}
    for key in ("root", "cwd", "home", "settings_file"):
        if key in options and not isinstance(options[key], str):
            raise ConfigurationError(f"{where}.{key}: expected a path string")
    root = base / options["root"] if "root" in options else None
    cwd = base / options["cwd"] if "cwd" in options else None
    frameworks = options.get("frameworks", [])
    if not isinstance(frameworks, list) or not all(isinstance(f, str) for f in frameworks):
        raise ConfigurationError(f"{where}.frameworks: expected a list of framework names")
    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown:
        raise ConfigurationError(
            f"{where}.frameworks: unknown framework {unknown[0]!r} (it would never match); "
            f"expected {', '.join(FRAMEWORKS)}"
        )
    common: dict[str, Any] = {"cwd": cwd, "home": options.get("home"), "frameworks": tuple(frameworks)}
    rules: list[PolicyRule] = []
    if "settings_file" in options:
        settings_file = base / options["settings_file"]
        rules += _with_source(
            source, "claude_permissions.settings_file", import_claude_settings, settings_file, root=root, **common
        )
    if permissions:
        rules += _with_source(source, "claude_permissions", import_claude_settings, permissions, root=root, **common)
    # a text both in the settings file and inline is the same rule: keep it once
    return list({rule.name: rule for rule in rules}.values())


def _with_source(source: str, key: str, function: Any, *args: Any, **kwargs: Any) -> list[PolicyRule]:
    try:
        rules: list[PolicyRule] = function(*args, **kwargs)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{source}: {key}: {exc}") from exc
    return rules


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        location = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts)

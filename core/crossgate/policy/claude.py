"""Claude Code permission rules as crossgate policy rules, so a team brings its ``settings.json`` along.

The text form is ``Tool`` or ``Tool(specifier)``; how a specifier matches depends on the tool:

- ``Bash(npm run *)``: the ``command``, with Claude's wildcards: ``*`` is any text, a trailing `` *`` after a
  space is a word boundary and optional (``Bash(ls *)`` matches ``ls`` and ``ls -la``, not ``lsof``), and the
  legacy ``Bash(npm run:*)`` is the same as ``Bash(npm run *)``. ``Bash`` and ``Bash(*)`` cover every command.
- ``Read(...)``, ``Edit(...)``, ``Write(...)``, ``NotebookEdit(...)``: gitignore-style globs on the file path
  (``*`` within one directory, ``**`` across). ``Edit`` covers every file-editing tool (Edit, MultiEdit, Write,
  NotebookEdit), as in Claude Code; ``Read`` covers Read. See :func:`path_pattern` for ``//``, ``~/``, ``/``, ``./``.
- ``WebFetch(domain:example.com)``: the host of the ``url`` (``domain:*.example.com`` for its subdomains).
- ``Agent(Explore)`` (or ``Task(...)``): the ``subagent_type``.
- ``Tool(param:value)`` for any tool: the top-level argument ``param`` equals ``value`` (``*`` any text);
  a call that omits the argument never matches. Not for a tool's primary field (``Bash(command:...)``).
- ``mcp__server__tool`` one MCP tool; ``mcp__server`` and ``mcp__server__*`` every tool of that server.
  crossgate names a tool by its own name in every SDK, with the MCP server in the call's context, so
  these become rules on the tool ``tool`` (or any tool) with the context condition ``mcp_server``
  (see :func:`mcp_readings`).

Where crossgate's reading differs from Claude Code's, it errs towards asking (fail closed):

- A deny or ask ``Bash`` rule matches where its pattern starts any command word in the text, so
  ``Bash(rm -rf *)`` also denies ``cd /tmp && rm -rf x``, ``sudo rm -rf x`` and ``bash -c 'rm -rf x'``.
  An allow rule must match the whole command, and its wildcards never cross shell operators (``;``, ``&``,
  ``|``, backquotes, ``$(``, redirections), so ``Bash(npm test *)`` never allows ``npm test && rm -rf x``;
  compound commands go to a person instead of being split and checked part by part as Claude Code does.
- Relative path patterns (``/p``, ``./p``, ``p``): deny and ask rules match them at any depth (``**/p``), since
  crossgate does not know every call's working directory; allow rules match only below the given root or
  working directory, or, with neither given, only relative paths.
- ``Write(path)`` rules apply to the Write tool (Claude Code accepts and then ignores them), and
  ``mcp__...(param:value)`` rules apply (Claude Code skips them).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from crossgate.errors import ConfigurationError
from crossgate.model import VerdictKind
from crossgate.policy.rules import ArgCondition, MatchKind, PolicyRule

_TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_RULE = re.compile(r"(?P<tool>[^()\s]+)(?:\((?P<spec>.*)\))?", re.DOTALL)
_PARAM = re.compile(r"(?P<param>[A-Za-z_][A-Za-z0-9_]*):(?P<value>.*)", re.DOTALL)
_MCP_PART = re.compile(r"[A-Za-z0-9_.*-]+")

_PATH_TOOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "Read": (("Read", "file_path"),),
    "Edit": (
        ("Edit", "file_path"),
        ("MultiEdit", "file_path"),
        ("Write", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ),
    "Write": (("Write", "file_path"),),
    "NotebookEdit": (("NotebookEdit", "notebook_path"),),
}
_PRIMARY = {
    "Bash": "command",
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
    "WebFetch": "url",
}
_SECONDARY = {
    "Bash": {"timeout", "description", "run_in_background", "dangerouslyDisableSandbox"},
    "Read": {"offset", "limit", "pages"},
    "Edit": {"old_string", "new_string", "replace_all"},
    "Write": {"content"},
    "NotebookEdit": {"cell_id", "new_source", "cell_type", "edit_mode"},
    "WebFetch": {"prompt"},
}
_SUBAGENT_TOOLS = ("Agent", "Task")

# Policy regexes run on RE2 (linear time), whose \s is ASCII only: Python's \s (what str.isspace() calls
# space) is spelled out, so these rules read a command exactly as before.
_SPACE_CHARS = r"\t\n\x0b\f\r \x1c-\x1f\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_SPACE = f"[{_SPACE_CHARS}]"
# Shell metacharacters an allow rule's wildcard may not cross: operators, substitutions, redirections.
_SHELL_SPECIAL = ";&|\n\r`$()<>"
_ALLOW_CHAR = "[^" + "".join(f"\\x{{{ord(c):x}}}" for c in _SHELL_SPECIAL) + "]"
# A deny pattern may start after any of these (a command word inside a compound command, a quote, a path).
# RE2 has no lookaround: the character before and the end are consumed, which a search does not mind.
_DENY_START = rf"(?:\A|[{_SPACE_CHARS};&|(`'\"{{/])"
_DENY_END = rf"{_SPACE}*(?:\z|[;&|\n)`'\"}}])"


def parse_claude_rule(
    text: str,
    verdict: VerdictKind | str,
    *,
    root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    frameworks: Sequence[str] = (),
    name: str | None = None,
) -> tuple[PolicyRule, ...]:
    """The policy rules that say ``verdict`` for what the Claude Code rule ``text`` covers.

    One text gives one rule, except ``Edit(...)``, which gives one per file-editing tool. ``root`` is the
    project directory (for ``/path``), ``cwd`` the working directory (for ``./path``; defaults to ``root``),
    ``home`` the home directory for ``~/path`` (defaults to this machine's). Raises ``ConfigurationError``
    for text crossgate cannot read exactly.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"Claude permission rule {text!r}: expected a string")
    kind = _verdict(verdict, text)
    stripped = text.strip()
    if not stripped:
        raise ConfigurationError(f"Claude permission rule {text!r}: empty rule text")
    match = _RULE.fullmatch(stripped)
    if match is None:
        raise ConfigurationError(
            f"Claude permission rule {text!r}: expected Tool or Tool(specifier), the parentheses closing the text"
        )
    tool, spec = match["tool"], match["spec"]
    base = name or f"claude:{kind.value}:{stripped}"
    targets = _targets(stripped, tool, spec, kind, _Dirs(root, cwd, home))
    reason = _reason(kind, stripped)
    rules = []
    for target in targets:
        rule_name = base if len(targets) == 1 else f"{base} [{target.label}]"
        rules.append(
            PolicyRule(
                name=rule_name,
                verdict=kind,
                tool=target.tool,
                where=target.where,
                context=target.context,
                frameworks=tuple(frameworks),
                reason=reason,
            )
        )
    return tuple(rules)


def import_claude_settings(
    data_or_path: Mapping[str, Any] | str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    frameworks: Sequence[str] = (),
) -> list[PolicyRule]:
    """Policy rules for a Claude Code ``settings.json`` ``permissions`` block: its deny, ask and allow lists.

    ``data_or_path`` is the parsed settings (with a ``permissions`` key, or the block itself) or the path of
    a settings file; for a path such as ``<project>/.claude/settings.json``, ``root`` defaults to ``<project>``.
    Rules come out deny first, then ask, then allow; evaluation ranks deny over ask over allow whatever the order,
    as Claude Code does. Repeated texts in one list are read once.

    Ignored, because they are Claude Code session settings and not rules: ``defaultMode`` (crossgate's policy
    default applies to calls no rule covers), ``additionalDirectories``, ``disableBypassPermissionsMode`` and
    ``disableAutoMode``; any other key in the block raises ``ConfigurationError``.
    """
    where = "Claude settings"
    if isinstance(data_or_path, (str, os.PathLike)):
        path = Path(data_or_path)
        where = str(path)
        data = _read_json(path)
        if root is None:
            parent = Path(os.path.abspath(path)).parent
            root = parent.parent if parent.name == ".claude" else parent
    else:
        data = data_or_path
    block = _permissions_block(data, where)
    rules: list[PolicyRule] = []
    for kind in (VerdictKind.DENY, VerdictKind.ASK, VerdictKind.ALLOW):
        for text in _rule_texts(block, kind, where):
            try:
                rules.extend(parse_claude_rule(text, kind, root=root, cwd=cwd, home=home, frameworks=frameworks))
            except ConfigurationError as exc:
                raise ConfigurationError(f"{where}: permissions.{kind.value}: {exc}") from exc
    return rules


_IGNORED_KEYS = frozenset({"defaultMode", "additionalDirectories", "disableBypassPermissionsMode", "disableAutoMode"})


def _permissions_block(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where}: expected a JSON object, got {type(data).__name__}")
    block = data.get("permissions", data)
    if not isinstance(block, Mapping):
        raise ConfigurationError(f"{where}: permissions must be an object, got {type(block).__name__}")
    unknown = sorted(set(block) - {"allow", "deny", "ask"} - _IGNORED_KEYS)
    if "permissions" not in data and not set(block) & {"allow", "deny", "ask"}:
        raise ConfigurationError(f"{where}: no permissions block (expected permissions.allow, .deny or .ask)")
    if unknown:
        raise ConfigurationError(f"{where}: unknown key(s) in permissions: {', '.join(map(str, unknown))}")
    return block


def _rule_texts(block: Mapping[str, Any], kind: VerdictKind, where: str) -> list[str]:
    texts = block.get(kind.value, [])
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ConfigurationError(f"{where}: permissions.{kind.value} must be a list of rule strings")
    return list(dict.fromkeys(t.strip() for t in texts))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: not valid JSON: {exc}") from exc


def _verdict(verdict: VerdictKind | str, text: str) -> VerdictKind:
    try:
        return VerdictKind(verdict)
    except ValueError:
        raise ConfigurationError(f"Claude permission rule {text!r}: unknown verdict {verdict!r}") from None


def _reason(kind: VerdictKind, text: str) -> str:
    if kind is VerdictKind.DENY:
        return f"The permission rule {text} forbids this call. Do not retry it."
    if kind is VerdictKind.ASK:
        return f"The permission rule {text} asks a person to review this call."
    return f"The permission rule {text} allows this call."


class _Dirs:
    """Where relative path patterns point: the project root, the working directory, the home directory."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        cwd: str | os.PathLike[str] | None,
        home: str | os.PathLike[str] | None,
    ) -> None:
        self.root = _absolute(root)
        self.cwd = _absolute(cwd) or self.root
        self.home = _absolute(home) or Path.home().as_posix()


def _absolute(value: str | os.PathLike[str] | None) -> str | None:
    # abspath, not resolve: calls name paths as the agent sees them, symbolic links unresolved
    return None if value is None else Path(os.path.abspath(Path(value).expanduser())).as_posix()


@dataclass(frozen=True)
class Target:
    """What one imported rule covers: a tool glob, argument conditions, context conditions."""

    tool: str
    where: tuple[ArgCondition, ...] = ()
    context: tuple[ArgCondition, ...] = ()
    label: str = ""
    """Tells the rules of one text apart in their names (``Edit``, ``server tickets``)."""


def _targets(text: str, tool: str, spec: str | None, kind: VerdictKind, dirs: _Dirs) -> list[Target]:
    if tool.startswith("mcp__"):
        return _mcp_targets(text, tool, spec, kind)
    if _TOOL_NAME.fullmatch(tool) is None:
        raise ConfigurationError(f"Claude permission rule {text!r}: {tool!r} is not a tool name")
    tools = _PATH_TOOLS.get(tool, ((tool, _PRIMARY.get(tool, "")),))
    if spec is None:
        return [Target(name, label=name) for name, _ in tools]
    if not spec.strip():
        raise ConfigurationError(f"Claude permission rule {text!r}: empty specifier; write {tool} for every call")
    param = _param_condition(text, tool, spec)
    if param is not None:
        return [Target(name, (param,), label=name) for name, _ in tools]
    if tool == "Bash":
        regex = bash_command_regex(spec, kind)
        where = () if regex is None else (ArgCondition(arg="command", kind=MatchKind.REGEX, pattern=regex),)
        return [Target("Bash", where)]
    if tool in _PATH_TOOLS:
        pattern = path_pattern(spec, kind, root=dirs.root, cwd=dirs.cwd, home=dirs.home)
        return [
            Target(name, (ArgCondition(arg=arg, kind=MatchKind.PATH, pattern=pattern),), label=name)
            for name, arg in tools
        ]
    if tool == "WebFetch":
        return [Target("WebFetch", (_domain_condition(text, spec),))]
    if tool in _SUBAGENT_TOOLS:
        glob = _claude_glob(spec.strip())
        return [Target(tool, (ArgCondition(arg="subagent_type", kind=MatchKind.GLOB, pattern=glob),))]
    raise ConfigurationError(
        f"Claude permission rule {text!r}: crossgate does not know how Claude Code matches a specifier of {tool}; "
        f"write {tool} for every call or {tool}(param:value) for one argument"
    )


def _param_condition(text: str, tool: str, spec: str) -> ArgCondition | None:
    """The ``Tool(param:value)`` form, or None when ``spec`` is the tool's own specifier syntax."""
    match = _PARAM.fullmatch(spec.strip())
    if match is None:
        if tool in _PRIMARY or tool in _SUBAGENT_TOOLS:
            return None
        raise ConfigurationError(
            f"Claude permission rule {text!r}: {tool} takes a specifier only as param:value ({tool}(name:value))"
        )
    param = match["param"]
    if param == _PRIMARY.get(tool):
        raise ConfigurationError(
            f"Claude permission rule {text!r}: {param} is {tool}'s primary argument, which Claude Code does not "
            f"match with param:value; write {tool}(<pattern>) instead"
        )
    if tool in _SECONDARY and param not in _SECONDARY[tool]:
        return None  # the tool's own syntax that happens to contain a colon: Bash(npm:*), WebFetch(domain:...)
    return ArgCondition(arg=param, kind=MatchKind.GLOB, pattern=_claude_glob(match["value"]))


def _claude_glob(value: str) -> str:
    """A Claude value pattern (only ``*`` is special) as an fnmatch pattern."""
    return re.sub(r"([?\[])", r"[\1]", value)


def _mcp_targets(text: str, tool: str, spec: str | None, kind: VerdictKind) -> list[Target]:
    body = tool[len("mcp__") :]
    parts = body.split("__")
    if not parts[0] or any(_MCP_PART.fullmatch(p) is None for p in parts):
        raise ConfigurationError(f"Claude permission rule {text!r}: expected mcp__<server> or mcp__<server>__<tool>")
    if "*" in parts[0] and kind is VerdictKind.ALLOW:
        raise ConfigurationError(
            f"Claude permission rule {text!r}: Claude Code skips an allow rule with a wildcard in the server name; "
            "write mcp__<server> or mcp__<server>__*"
        )
    where: tuple[ArgCondition, ...] = ()
    if spec is not None:
        match = _PARAM.fullmatch(spec.strip())
        if match is None:
            raise ConfigurationError(
                f"Claude permission rule {text!r}: an MCP tool takes a specifier only as param:value"
            )
        where = (ArgCondition(arg=match["param"], kind=MatchKind.GLOB, pattern=_claude_glob(match["value"])),)
    readings = mcp_readings(body, kind)
    return [
        Target(
            tool_glob,
            where,
            (ArgCondition(arg="mcp_server", kind=MatchKind.GLOB, pattern=server_glob),),
            label=f"server {server_glob}" + ("" if tool_glob == "*" else f", tool {tool_glob}"),
        )
        for server_glob, tool_glob in readings
    ]


def mcp_readings(body: str, verdict: VerdictKind | str) -> list[tuple[str, str]]:
    """(server glob, tool glob) pairs for the text of an ``mcp__<body>`` rule, on crossgate's names.

    The CLI names an MCP tool ``mcp__<server>__<tool>``, writing every character of the server's name
    other than ``[A-Za-z0-9_-]`` as ``_``; crossgate names it ``<tool>``, with the server's own name in
    ``context.mcp_server``. Claude Code reads the first ``__``-separated part of a rule as the server:

    - ``mcp__s`` and ``mcp__s__*`` cover every tool whose CLI name starts ``mcp__s__``: the tools of ``s``
      and, since server names may contain ``__``, of every server named ``s__...`` (deny and ask rules only:
      an allow rule covers the server ``s`` alone, erring towards asking);
    - ``mcp__s__t`` covers the one CLI name ``mcp__s__t``. If ``s__t`` holds more ``__``, each split of it is
      a server and tool whose CLI name that is (``mcp__a__b__c``: ``a``'s tool ``b__c``, ``a__b``'s ``c``).
    """
    kind = VerdictKind(verdict)
    parts = body.split("__")
    if len(parts) == 1 or parts[1:] == ["*"]:
        server = _server_glob(parts[0])
        readings = [(server, "*")]
        if kind is not VerdictKind.ALLOW and parts[0] != "*":
            readings.append((server + "__*", "*"))
        return readings
    return [(_server_glob("__".join(parts[:i])), _claude_glob("__".join(parts[i:]))) for i in range(1, len(parts))]


def _server_glob(written: str) -> str:
    """A glob on the server's own name for the server part of a rule, as the CLI writes it in tool names.

    ``_`` there stands for ``_`` or any character outside ``[A-Za-z0-9-]`` (the CLI writes those as ``_``).
    """
    return "".join("[!A-Za-z0-9-]" if c == "_" else c for c in _claude_glob(written))


def bash_command_regex(spec: str, verdict: VerdictKind | str) -> str | None:
    """A regular expression for the Bash ``command`` that the specifier covers; None for every command.

    Deny and ask rules search for the pattern at the start of any command word; allow rules match the
    whole command and their wildcards never cross a shell operator (see the module docstring).
    """
    kind = VerdictKind(verdict)
    pattern = spec.strip()
    if pattern.endswith(":*"):
        pattern = pattern[:-2].rstrip() + " *"
    if ":*" in pattern:
        raise ConfigurationError(f"Bash({spec}): the legacy :* wildcard is only valid at the end of the pattern")
    if not pattern.strip(" *"):
        if pattern == "*":
            return None
        raise ConfigurationError(f"Bash({spec}): a pattern of only wildcards and spaces; write Bash for every command")
    deny = kind is not VerdictKind.ALLOW
    char = "(?s:.)" if deny else _ALLOW_CHAR
    space, one_space = (_SPACE, _SPACE) if deny else (r"[ \t]", r"[ \t]")
    pieces = pattern.split("*")
    if len(pieces) == 2 and pieces[1] == "" and pieces[0][-1:].isspace():  # "ls *": word boundary, optional tail
        body = _segment(pieces[0].rstrip(), space, one_space) + f"(?:{one_space}{char}*)?"
        return _DENY_START + body + _DENY_END if deny else rf"\A{_SPACE}*" + body + rf"{_SPACE}*\z"
    segments = [
        _segment(piece, space, one_space, after_wild=i > 0, before_wild=i < len(pieces) - 1)
        for i, piece in enumerate(pieces)
    ]
    return _glob_regex(segments, char, deny)


def _glob_regex(segments: list[str], char: str, deny: bool) -> str:
    """Segments joined by wildcards; RE2 runs it in time linear in the command's length, however it is built."""
    first, *rest = segments
    end = _DENY_END if deny else rf"{_SPACE}*\z"
    start = _DENY_START if deny else rf"\A{_SPACE}*"
    if not rest:
        return start + first + end
    *middle, last = rest
    head = start + first
    if deny and not first:  # a leading wildcard: the next segment may be anywhere
        head = r"\A"
    body = "".join(f"{char}*?{segment}" for segment in middle)
    tail = f"{char}*" if not last else f"{char}*?{last}"
    return head + body + tail + end


def _segment(text: str, space: str, one_space: str, *, after_wild: bool = False, before_wild: bool = False) -> str:
    """A literal piece of a Bash pattern; whitespace next to a wildcard is one character, the wildcard has the rest."""
    lead = after_wild and text[:1].isspace()
    trail = before_wild and text[-1:].isspace() and bool(text.strip())
    core = text.strip() if text.strip() else ""
    if not core:
        return one_space if text else ""
    inner = "".join(f"{space}+" if t.isspace() else re.escape(t) for t in re.split(r"(\s+)", core) if t)
    return (one_space if lead else "") + inner + (one_space if trail else "")


def path_pattern(
    spec: str,
    verdict: VerdictKind | str,
    *,
    root: str | None = None,
    cwd: str | None = None,
    home: str | None = None,
) -> str:
    """The crossgate path glob for a Claude ``Read``/``Edit`` specifier.

    - ``//abs/path``: the absolute ``/abs/path``;
    - ``~/path``: below ``home`` (this machine's home directory when not given);
    - ``/path``: relative to the project ``root``; ``./path`` and ``path``: relative to ``cwd`` (default ``root``);
      for deny and ask rules both match at any depth (``**/path``); for allow rules they are joined to their
      directory, or left relative when it is unknown (then only relative call paths match).

    A trailing ``/`` means everything below the directory (``dir/`` is ``dir/**``).
    """
    kind = VerdictKind(verdict)
    raw = spec.strip()
    if raw.startswith("//"):
        pattern = "/" + raw.lstrip("/")
    elif raw == "~" or raw.startswith("~/"):
        pattern = (home or Path.home().as_posix()).rstrip("/") + raw[1:]
    elif raw.startswith("~"):
        raise ConfigurationError(f"path {spec!r}: ~user paths are not supported; write //home/<user>/...")
    else:
        anchored = raw.startswith("/")
        relative = raw.lstrip("/") if anchored else _strip_dot(raw)
        if not relative:
            raise ConfigurationError(f"path {spec!r}: names no file; write ** for everything below a directory")
        base = root if anchored else (cwd or root)
        if kind is not VerdictKind.ALLOW:
            if ".." in PurePosixPath(relative).parts:
                raise ConfigurationError(f"path {spec!r}: a deny or ask pattern cannot climb out with ..")
            pattern = relative if relative.startswith("**/") else "**/" + relative
        elif base is not None:
            pattern = posixpath.normpath(f"{base}/{relative}")
            pattern += "/" if relative.endswith("/") else ""
        elif ".." in PurePosixPath(relative).parts:
            raise ConfigurationError(f"path {spec!r}: climbs out with .. but no root or cwd was given")
        else:
            pattern = relative
    return pattern + "**" if pattern.endswith("/") else pattern


def _strip_dot(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return "" if path == "." else path


def _domain_condition(text: str, spec: str) -> ArgCondition:
    match = _PARAM.fullmatch(spec.strip())
    if match is None or match["param"] != "domain":
        raise ConfigurationError(f"Claude permission rule {text!r}: WebFetch takes domain:<host>")
    host = match["value"].strip().lower().rstrip(".")
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    if not re.fullmatch(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*", name):
        raise ConfigurationError(f"Claude permission rule {text!r}: {host!r} is not a host name (or *.host)")
    host_regex = (r"(?:[a-z0-9-]+\.)+" if wildcard else "") + re.escape(name)
    regex = (
        rf"\A{_SPACE}*(?:[A-Za-z][A-Za-z0-9+.-]*:)?(?://)?(?:[^/?#@{_SPACE_CHARS}\\]*@)?"
        f"(?i:{host_regex})" + rf"\.?(?::\p{{Nd}}*)?(?:[/?#\\]|{_SPACE}*\z)"
    )
    return ArgCondition(arg="url", kind=MatchKind.REGEX, pattern=regex)

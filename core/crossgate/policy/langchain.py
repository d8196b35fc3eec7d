"""LangChain ``HumanInTheLoopMiddleware(interrupt_on=...)`` as crossgate policy rules.

``interrupt_on`` maps a tool name to ``True`` (interrupt; every decision allowed), ``False`` (run without
review) or an ``InterruptOnConfig`` dict (``allowed_decisions``, optional ``description``, ``when`` and the
unused ``args_schema``). Nothing of LangChain is imported: the mapping is read as plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from crossgate.errors import ConfigurationError
from crossgate.model import ALL_DECISIONS, DecisionKind, VerdictKind
from crossgate.policy.rules import PolicyRule

WhenHandling = Literal["refuse", "ask"]
"""What to do with a ``when`` predicate: refuse the import, or always ask (the predicate may have skipped review)."""

DescriptionHandling = Literal["refuse", "drop"]
"""What to do with a callable ``description``: refuse the import, or drop it (crossgate's own text is shown)."""

_CONFIG_KEYS = frozenset({"allowed_decisions", "description", "when", "args_schema"})


def import_interrupt_on(
    mapping: Mapping[str, Any],
    *,
    when: WhenHandling = "refuse",
    callable_description: DescriptionHandling = "refuse",
    frameworks: tuple[str, ...] = (),
) -> list[PolicyRule]:
    """Policy rules for an ``interrupt_on`` mapping: ask for ``True`` and configs, allow for ``False``.

    A ``when`` predicate and a callable ``description`` are Python code that a policy cannot carry; the
    import refuses them with ``ConfigurationError`` unless ``when="ask"`` (ask for every call of that tool,
    which asks at least as often as the predicate did) or ``callable_description="drop"`` says how to handle
    them. ``args_schema`` is ignored, as LangChain itself ignores it.

    LangChain runs tools that ``interrupt_on`` does not list without review; to reproduce that, build the
    policy with ``Policy(rules=..., default="allow")``. crossgate's default is to ask.
    """
    if not isinstance(mapping, Mapping):
        raise ConfigurationError(
            f"interrupt_on must be a mapping of tool name to setting, got {type(mapping).__name__}"
        )
    rules: list[PolicyRule] = []
    for tool, setting in mapping.items():
        if not isinstance(tool, str) or not tool:
            raise ConfigurationError(f"interrupt_on: tool names must be non-empty strings, got {tool!r}")
        rules.append(_rule(tool, setting, when, callable_description, frameworks))
    return rules


def _rule(
    tool: str,
    setting: Any,
    when: WhenHandling,
    callable_description: DescriptionHandling,
    frameworks: tuple[str, ...],
) -> PolicyRule:
    where = f"interrupt_on[{tool!r}]"
    common: dict[str, Any] = {"tool": _literal_glob(tool), "frameworks": frameworks}
    if setting is True:
        return PolicyRule(name=f"langchain:ask:{tool}", verdict=VerdictKind.ASK, reason=_ASK_REASON, **common)
    if setting is False:
        return PolicyRule(
            name=f"langchain:allow:{tool}",
            verdict=VerdictKind.ALLOW,
            reason=f"interrupt_on lets {tool} run without review.",
            **common,
        )
    if not isinstance(setting, Mapping):
        raise ConfigurationError(f"{where}: expected true, false or a config mapping, got {type(setting).__name__}")
    unknown = sorted(str(k) for k in set(setting) - _CONFIG_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(_CONFIG_KEYS))}"
        )
    if setting.get("when") is not None and when == "refuse":
        raise ConfigurationError(
            f"{where}: 'when' is a Python predicate and cannot be imported; pass when='ask' to ask for every "
            f"{tool} call, or write policy rules with argument conditions instead"
        )
    return PolicyRule(
        name=f"langchain:ask:{tool}",
        verdict=VerdictKind.ASK,
        reason=_ASK_REASON,
        allowed_decisions=_decisions(setting.get("allowed_decisions"), where),
        description=_description(setting.get("description"), where, callable_description),
        **common,
    )


_ASK_REASON = "interrupt_on asks a person to review this tool."


def _decisions(value: Any, where: str) -> tuple[DecisionKind, ...]:
    if value is None:
        raise ConfigurationError(f"{where}: allowed_decisions is required (LangChain requires it too)")
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ConfigurationError(f"{where}: allowed_decisions must be a non-empty list of {_names()}")
    decisions: list[DecisionKind] = []
    for item in value:
        try:
            decision = DecisionKind(item)
        except ValueError:
            raise ConfigurationError(
                f"{where}: allowed_decisions: unknown decision {item!r}; expected {_names()}"
            ) from None
        if decision not in decisions:
            decisions.append(decision)
    return tuple(decisions)


def _description(value: Any, where: str, handling: DescriptionHandling) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if callable(value):
        if handling == "drop":
            return None
        raise ConfigurationError(
            f"{where}: description is a callable and cannot be imported; pass callable_description='drop' "
            "to use crossgate's description, or give a string"
        )
    raise ConfigurationError(f"{where}: description must be a string, got {type(value).__name__}")


def _names() -> str:
    return ", ".join(d.value for d in ALL_DECISIONS)


def _literal_glob(name: str) -> str:
    """``name`` as a tool glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)

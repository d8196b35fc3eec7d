"""Small builders shared by the policy tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from crossgate.model import RememberMatch, RememberScope, StandingRule, ToolCall, VerdictKind

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def call(tool: str, framework: str = "langgraph", **fields: Any) -> ToolCall:
    """A tool call; keyword ``args`` sets the arguments, the rest are ToolCall fields."""
    return ToolCall(framework=framework, tool=tool, **fields)


def standing(
    id: str,
    effect: str = "allow",
    tool: str = "*",
    *,
    age_minutes: int = 10,
    **fields: Any,
) -> StandingRule:
    """A standing rule created ``age_minutes`` before :data:`NOW`."""
    return StandingRule(
        id=id,
        effect=VerdictKind(effect),  # type: ignore[arg-type]
        tool=tool,
        created_at=NOW - timedelta(minutes=age_minutes),
        **fields,
    )


__all__ = ["NOW", "RememberMatch", "RememberScope", "call", "standing"]

"""Which calls a pause of an agent that runs inside a tool (a Deep Agents subagent) is for.

A Deep Agents subagent runs inside its parent's ``task`` tool: it shares the thread, not the thread's
messages, so when its pause reaches the gate, the call it names is nowhere in the thread's state. The
middleware kept every call it paused for, with the namespace of the agent graph it ran in
(:func:`~crossgate_langgraph._calls.remember_judged`); the gate matches the interrupt against the calls
kept under the parent task that holds the interrupt: a per-call pause by the model's call id, tool and
arguments, a batched one by tool and arguments fingerprint, in order. A pause no kept call matches, or
that two agents' calls match alike, is not parked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crossgate import AdapterError, fingerprint
from crossgate_langgraph._calls import PausedCall

Matched = tuple[PausedCall, Any, Any]
"""A kept call, the interrupt's description of it and its allowed decisions (None: all)."""


def nested_matches(value: Mapping[str, Any], shape: str, kept: Sequence[PausedCall]) -> list[Matched] | None:
    """The kept calls a HITL interrupt ``value`` of ``shape`` asks about; None when none of them is its call."""
    if shape == "tool_approval":
        name, args = value.get("name"), value.get("args")
        found = [p for p in kept if p.call.call_id == value.get("tool_call_id") and _same(p, name, args)]
        if not found:
            return None
        _one_agent(found, f"tool call {value.get('tool_call_id')!r}")
        return [(found[-1], value.get("description"), None)]  # the latest pause of that agent: the pending one
    actions, configs = value["action_requests"], value["review_configs"]
    if not actions:
        return None
    first = [p for p in kept if _same(p, actions[0].get("name"), actions[0].get("args"))]
    if not first:
        return None
    _one_agent(first, f"{actions[0].get('name')} with these arguments")
    turn = [p for p in kept if (p.graph_ns, p.turn) == (first[-1].graph_ns, first[-1].turn)]
    matched: list[Matched] = []
    position = 0
    for action, config in zip(actions, configs, strict=True):
        while position < len(turn) and not _same(turn[position], action.get("name"), action.get("args")):
            position += 1
        if position == len(turn):
            raise AdapterError(
                f"a subagent's batched pause lists {action.get('name')} but crossgate paused no such call "
                "in that turn; not parking it"
            )
        matched.append((turn[position], action.get("description"), config.get("allowed_decisions")))
        position += 1
    return matched


def _same(paused: PausedCall, name: Any, args: Any) -> bool:
    if paused.name != name or not isinstance(args, Mapping):
        return False
    return fingerprint(paused.name, paused.model_args) == fingerprint(str(name), dict(args))


def _one_agent(found: Sequence[PausedCall], what: str) -> None:
    """Refuse a pause that calls of two agent graphs match: crossgate cannot tell whose decision it takes."""
    if len({p.graph_ns for p in found}) > 1:
        raise AdapterError(f"two subagents in one task paused for {what}; cannot tell them apart, not parking it")

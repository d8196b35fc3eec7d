"""``nested_matches``: which kept calls a subagent's pause is for, and the pauses it refuses to guess about.

The end-to-end paths are in ``test_deepagents.py``; these are the cases a real Deep Agent reaches only
with nested subagents or a model that repeats itself, built from kept calls directly.
"""

from __future__ import annotations

from typing import Any

import pytest

from crossgate import AdapterError
from crossgate_langgraph._calls import PausedCall, agent_call
from crossgate_langgraph._nested import nested_matches

TASK = "tools:parent-task"


def kept(call_id: str, ticket: str, *, ns: str = TASK, turn: int = 1, tool: str = "delete_ticket") -> PausedCall:
    call = agent_call(tool, {"id": ticket}, call_id=call_id, thread="th", agent="deep")
    return PausedCall(f"req-{ns}-{turn}-{call_id}", call, ns, turn, tool, {"id": ticket}, None)


def per_call(call_id: str, ticket: str) -> dict[str, Any]:
    return {"type": "tool_approval", "tool_call_id": call_id, "name": "delete_ticket", "args": {"id": ticket}}


def batched(*tickets: str) -> dict[str, Any]:
    return {
        "action_requests": [
            {"name": "delete_ticket", "args": {"id": t}, "description": f"delete {t}"} for t in tickets
        ],
        "review_configs": [{"action_name": "delete_ticket", "allowed_decisions": ["approve"]} for _ in tickets],
    }


def test_a_per_call_pause_is_the_latest_kept_call_of_its_id_tool_and_arguments() -> None:
    earlier, latest = kept("c1", "t3", turn=1), kept("c1", "t3", turn=2)
    [(found, description, allowed)] = nested_matches(per_call("c1", "t3"), "tool_approval", [earlier, latest]) or []
    assert (found, description, allowed) == (latest, None, None)


@pytest.mark.parametrize("value", [per_call("c1", "t2"), per_call("c2", "t3")], ids=["other args", "other id"])
def test_a_pause_no_kept_call_matches_is_not_a_subagents(value: dict[str, Any]) -> None:
    assert nested_matches(value, "tool_approval", [kept("c1", "t3")]) is None


def test_two_agents_in_one_task_pausing_for_the_same_call_are_refused() -> None:
    twins = [kept("c1", "t3", ns=f"{TASK}|tools:a"), kept("c1", "t3", ns=f"{TASK}|tools:b")]
    with pytest.raises(AdapterError, match="cannot tell them apart"):
        nested_matches(per_call("c1", "t3"), "tool_approval", twins)
    with pytest.raises(AdapterError, match="cannot tell them apart"):
        nested_matches(batched("t3"), "batched", twins)


def test_a_batched_pause_pairs_each_action_with_its_own_call_of_the_latest_turn_in_order() -> None:
    old = kept("c1", "t3", turn=1)
    first, second, other = kept("c1", "t3", turn=2), kept("c2", "t3", turn=2), kept("c3", "t1", turn=2)
    found = nested_matches(batched("t3", "t1", "t3"), "batched", [old, first, other, second]) or []
    assert [(p, d, a) for p, d, a in found] == [
        (first, "delete t3", ["approve"]),
        (other, "delete t1", ["approve"]),
        (second, "delete t3", ["approve"]),
    ]


def test_a_batched_pause_that_lists_a_call_the_turn_never_paused_for_is_refused() -> None:
    with pytest.raises(AdapterError, match="paused no such call"):
        nested_matches(batched("t3", "t2"), "batched", [kept("c1", "t3")])

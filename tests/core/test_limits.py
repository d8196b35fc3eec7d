"""The input limits a submitted call meets: text that is not text, and nesting, in any field of the call."""

from __future__ import annotations

from typing import Any

import pytest

from crossgate import Policy, ReviewQueue, ToolCall, VerdictKind
from crossgate.fingerprint import ENVELOPE_DEPTH, MAX_JSON_DEPTH
from crossgate.stores.memory import MemoryStore


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"context": {"tenant": "a\ud9ab"}}, "lone surrogate"),
        ({"context": {"deep": nested(MAX_JSON_DEPTH + ENVELOPE_DEPTH)}}, "nested too deeply"),
    ],
    ids=["context", "deep-context"],
)
def test_a_call_whose_context_is_not_text_or_json_is_denied_without_anyone_asked(
    fields: dict[str, Any], why: str
) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(default=VerdictKind.ALLOW))
    call = ToolCall(**{"framework": "langgraph", "tool": "read_ticket", "args": {"id": "t1"}, **fields})
    submission = queue.submit(call)
    assert submission.verdict.kind is VerdictKind.DENY
    assert "the call is not accepted" in submission.verdict.reason and why in submission.verdict.reason
    [event] = queue.events()
    assert event.kind == "auto_denied" and "args" not in event.payload


def test_a_context_nested_as_deep_as_records_may_be_is_accepted() -> None:
    queue = ReviewQueue(MemoryStore(), Policy(default=VerdictKind.ALLOW))
    # The call's fields are checked as canonical JSON of a record: arguments' depth plus the envelope's.
    call = ToolCall(
        framework="langgraph", tool="read_ticket", context={"deep": nested(MAX_JSON_DEPTH + ENVELOPE_DEPTH - 3)}
    )
    assert queue.submit(call).verdict.kind is VerdictKind.ALLOW

"""The exported JSON Schema of a request's allowed answers agrees with the queue's own checks."""

from __future__ import annotations

import json

import jsonschema
import pytest

from crossgate import DecisionKind, MemoryStore, ReviewQueue, ToolCall, parse_decision
from crossgate.schemas import decision_schema

ARGS_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


def request(capabilities: tuple[DecisionKind, ...] = tuple(DecisionKind)):  # type: ignore[no-untyped-def]
    queue = ReviewQueue(MemoryStore())
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"})
    made = queue.submit(call, args_schema=ARGS_SCHEMA, capabilities=capabilities).request
    assert made is not None
    return made


def valid(schema: dict, data: object) -> bool:  # type: ignore[type-arg]
    return jsonschema.Draft202012Validator(schema).is_valid(data)


def test_the_generic_schema_has_no_refs_and_accepts_each_kind() -> None:
    schema = decision_schema()
    assert "$ref" not in json.dumps(schema)
    for data in (
        {"kind": "approve"},
        {"kind": "edit", "args": {"x": 1}},
        {"kind": "reject", "message": "no"},
        {"kind": "respond", "content": "done"},
        {"kind": "approve", "remember": {"scope": "run"}},
    ):
        assert valid(schema, data), data
        parse_decision(data)


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "yes"},
        {"kind": "reject"},
        {"kind": "reject", "message": ""},
        {"kind": "approve", "reviewer": "me"},
        {"kind": "edit", "args": ["t1"]},
        {"kind": "approve", "remember": {"scope": "always"}},
        "approve",
    ],
)
def test_the_generic_schema_refuses_what_the_model_refuses(data: object) -> None:
    assert not valid(decision_schema(), data)


def test_a_requests_schema_lists_only_its_allowed_kinds_and_binds_its_arguments() -> None:
    made = request(capabilities=(DecisionKind.APPROVE, DecisionKind.REJECT, DecisionKind.EDIT))
    schema = decision_schema(made)
    assert [b["properties"]["kind"]["const"] for b in schema["oneOf"]] == ["approve", "edit", "reject"]
    assert valid(schema, {"kind": "edit", "args": {"id": "t2"}})
    assert not valid(schema, {"kind": "edit", "args": {"id": 2}})
    assert not valid(schema, {"kind": "respond", "content": "done"})
    assert valid(schema, {"kind": "approve", "fingerprint": made.fingerprint})
    assert not valid(schema, {"kind": "approve", "fingerprint": "0" * 64})

"""Requests as AG-UI interrupts and decisions as AG-UI resume entries, both ways, and what is refused."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate import (
    ApprovalRequest,
    Approve,
    DecisionKind,
    Edit,
    FingerprintMismatchError,
    InvalidDecisionError,
    MemoryStore,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    Respond,
    ReviewQueue,
    ToolCall,
    VerdictKind,
)
from crossgate.agui import (
    UNBOUND_TOOL_CALL,
    decision_of,
    interrupt_of,
    interrupt_outcome,
    payload_of,
    response_schema,
    resume_entry_of,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "pattern": "^t[0-9]+$"}, "force": {"type": "boolean"}},
    "required": ["id"],
    "additionalProperties": False,
}
NARROW = PolicyRule(
    name="narrow", verdict=VerdictKind.ASK, tool="drop_*", allowed_decisions=(DecisionKind.APPROVE, DecisionKind.REJECT)
)


@pytest.fixture(scope="module")
def queue() -> ReviewQueue:
    return ReviewQueue(MemoryStore(), Policy(rules=(NARROW,), default_timeout_seconds=600))


def ask(queue: ReviewQueue, tool: str = "delete_ticket", call_id: str | None = "call-1", **kw: Any) -> ApprovalRequest:
    call = ToolCall(framework="openai-agents", tool=tool, args={"id": "t1"}, call_id=call_id, run="r1", agent="triage")
    request = queue.submit(call, args_schema=kw.pop("args_schema", SCHEMA), **kw).request
    assert request is not None
    return request


def resolved(request: ApprovalRequest, payload: Any) -> dict[str, Any]:
    return {"interruptId": request.id, "status": "resolved", "payload": payload}


def test_a_request_is_a_tool_call_interrupt_bound_to_its_call(queue: ReviewQueue) -> None:
    request = ask(queue, description="Check the id.")
    interrupt = interrupt_of(request)
    assert interrupt["id"] == request.id and interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == "call-1" and interrupt["message"] == "Check the id."
    assert interrupt["expiresAt"] == (request.created_at + timedelta(seconds=600)).isoformat()
    meta = interrupt["metadata"]["crossgate"]
    assert (meta["tool"], meta["args"], meta["actionFingerprint"]) == (
        "delete_ticket",
        {"id": "t1"},
        request.fingerprint,
    )
    assert meta["allowedDecisions"] == ["approve", "edit", "reject", "respond"]
    jsonschema.Draft202012Validator.check_schema(interrupt["responseSchema"])
    unbound = interrupt_of(ask(queue, call_id=None))
    assert unbound["reason"] == UNBOUND_TOOL_CALL and "toolCallId" not in unbound, "AG-UI's tool_call needs the id"
    assert interrupt_outcome([request])["interrupts"] == [interrupt]
    with pytest.raises(ValueError, match="at least one"):
        interrupt_outcome([])


def test_the_schema_offers_edit_and_respond_only_where_the_request_allows_them(queue: ReviewQueue) -> None:
    wide = response_schema(ask(queue))
    assert {"editedArgs", "response"} <= wide["properties"].keys()
    narrow_request = ask(queue, tool="drop_table")
    narrow = response_schema(narrow_request)
    assert "editedArgs" not in narrow["properties"] and "response" not in narrow["properties"]
    for payload, field in (
        ({"approved": True, "editedArgs": {"id": "t2"}}, "editedArgs"),
        ({"approved": False, "response": "x"}, "response"),
    ):
        with pytest.raises(InvalidDecisionError, match=field):
            decision_of(narrow_request, resolved(narrow_request, payload))


remember = st.builds(
    Remember,
    scope=st.sampled_from([RememberScope.RUN, RememberScope.SESSION, RememberScope.FOREVER]),
    match=st.sampled_from([RememberMatch.TOOL, RememberMatch.EXACT]),
    this_agent_only=st.booleans(),
)
text = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
common = {"note": st.none() | st.text(max_size=20), "remember": st.none() | remember}
decisions = st.one_of(
    st.builds(Approve, **common),
    st.builds(
        Edit,
        args=st.fixed_dictionaries(
            {"id": st.from_regex(r"^t[0-9]{1,4}$", fullmatch=True)}, optional={"force": st.booleans()}
        ),
        **common,
    ),
    st.builds(Reject, message=text, **common),
    st.builds(Respond, content=st.text(max_size=40), **common),
)


@settings(max_examples=150, deadline=None)
@given(decision=decisions, bind=st.booleans())
def test_every_decision_round_trips_through_a_payload_its_schema_accepts(decision: Any, bind: bool) -> None:
    request = ask(ReviewQueue(MemoryStore()))
    if bind:
        decision = decision.model_copy(update={"fingerprint": request.fingerprint})
    payload = payload_of(decision)
    jsonschema.validate(payload, response_schema(request), cls=jsonschema.Draft202012Validator)
    assert decision_of(request, resolved(request, payload)) == decision
    decided = request.model_copy(update={"status": "decided", "decision": decision})
    assert resume_entry_of(decided) == resolved(request, payload)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (None, "needs a payload object"),
        ({}, "'approved' is a required property"),
        ({"approved": "yes"}, "is not of type 'boolean'"),
        ({"approved": False}, "a refusal needs a message for the model or a response"),
        ({"approved": False, "message": "   "}, "message"),
        ({"approved": False, "message": "no", "response": "x"}, "not both"),
        ({"approved": True, "message": "why"}, "an approval carries no message"),
        ({"approved": False, "message": "no", "editedArgs": {"id": "t2"}}, "editedArgs only comes with approved: true"),
        ({"approved": True, "editedArgs": {"id": "drop table"}}, "editedArgs/id"),
        ({"approved": True, "editedArgs": {"id": "t2", "extra": 1}}, "editedArgs"),
        ({"approved": True, "surprise": 1}, "surprise"),
        ({"approved": True, "remember": {"scope": "eternity"}}, "remember/scope"),
    ],
)
def test_payloads_the_request_does_not_accept_are_refused_with_where(
    queue: ReviewQueue, payload: Any, problem: str
) -> None:
    request = ask(queue)
    with pytest.raises(InvalidDecisionError, match=problem):
        decision_of(request, resolved(request, payload))
    if payload is not None:  # a client that validates with the schema refuses the same payloads
        assert not jsonschema.Draft202012Validator(response_schema(request)).is_valid(payload)


def test_entries_for_another_request_with_another_status_or_call_are_refused(queue: ReviewQueue) -> None:
    request, other = ask(queue), ask(queue)
    with pytest.raises(InvalidDecisionError, match="does not answer"):
        decision_of(request, resolved(other, {"approved": True}))
    with pytest.raises(InvalidDecisionError, match="resolved or cancelled"):
        decision_of(request, {"interruptId": request.id, "status": "approved", "payload": {"approved": True}})
    with pytest.raises(FingerprintMismatchError, match="another call"):
        decision_of(
            request, resolved(request, {"approved": True, "approvedActionFingerprint": other.fingerprint + "0"})
        )
    assert decision_of(request, {"interruptId": request.id, "status": "cancelled"}) is None


def test_tool_schemas_with_definitions_still_check_edited_arguments(queue: ReviewQueue) -> None:
    nested = {
        "type": "object",
        "properties": {"target": {"$ref": "#/$defs/Target"}},
        "required": ["target"],
        "$defs": {"Target": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    }
    call = ToolCall(framework="openai-agents", tool="delete_ticket", args={"target": {"id": 1}}, call_id="c9")
    request = queue.submit(call, args_schema=nested).request
    assert request is not None
    schema = response_schema(request)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert decision_of(request, resolved(request, {"approved": True, "editedArgs": {"target": {"id": 2}}})) == Edit(
        args={"target": {"id": 2}}
    )
    with pytest.raises(InvalidDecisionError, match="editedArgs/target/id"):
        decision_of(request, resolved(request, {"approved": True, "editedArgs": {"target": {"id": "two"}}}))


def test_closed_requests_resume_as_cancelled_and_pending_ones_not_at_all(queue: ReviewQueue) -> None:
    pending = ask(queue)
    assert resume_entry_of(pending) is None
    cancelled = queue.cancel(ask(queue).id, reason="The run was stopped.")
    entry = resume_entry_of(cancelled)
    assert entry == {
        "interruptId": cancelled.id,
        "status": "cancelled",
        "metadata": {"crossgate": {"status": "cancelled", "reason": "The run was stopped."}},
    }

"""Statuses and outcome events say what became of the call; JSON written under the old names reads the same."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crossgate import Approve, Edit, MemoryStore, Reject, ReviewQueue, ToolCall
from crossgate.model import (
    APPLIED_STATUSES,
    ApprovalRequest,
    Event,
    RequestStatus,
    Respond,
    event_kind,
    is_outcome,
)
from crossgate.outcomes import already_applied_message

T0 = datetime(2026, 11, 30, tzinfo=UTC)
CALL = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}, run="r1")


def _event(kind: str, **payload: object) -> Event:
    return Event(seq=1, at=T0, kind=kind, payload=payload, prev_hash="0" * 64, hash="0" * 64)


@pytest.mark.parametrize(
    ("decision", "status"),
    [
        (Approve(), RequestStatus.APPLIED),
        (Edit(args={"id": "t2"}), RequestStatus.APPLIED),
        (Reject(message="keep it"), RequestStatus.REJECTED),
        (Respond(content="archived instead"), RequestStatus.ANSWERED),
    ],
)
def test_a_decision_that_reached_the_agent_leaves_the_status_that_says_what_became_of_the_call(
    decision: Approve | Edit | Reject | Respond, status: RequestStatus
) -> None:
    queue = ReviewQueue(MemoryStore())
    request = queue.submit(CALL).request
    assert request is not None
    decided = queue.decide(request.id, decision, reviewer="ann")
    assert decided.status is RequestStatus.DECIDED
    applied = queue.mark_applied(decided, args=decided.approved_args(), actor="worker")
    assert applied.status is status and queue.get(request.id).status is status and applied.is_applied
    event = queue.events()[-1]
    assert (event.kind, event.payload) == ("applied", {"kind": decision.kind.value})
    ran = status is RequestStatus.APPLIED
    queue.record_outcome(applied, ran=ran, result="done" if ran else "not run")
    assert queue.events()[-1].kind == ("ran" if ran else "not_run")
    assert queue.verify_audit().ok


def test_old_json_with_applied_for_a_rejection_or_an_answer_reads_by_the_new_names() -> None:
    base = {
        "id": "req_1",
        "call": CALL.model_dump(mode="json"),
        "fingerprint": CALL.fingerprint,
        "status": "applied",
        "created_at": T0.isoformat(),
    }
    read = {
        kind: ApprovalRequest.model_validate({**base, "decision": decision}).status
        for kind, decision in (
            ("approve", {"kind": "approve"}),
            ("edit", {"kind": "edit", "args": {"id": "t2"}}),
            ("reject", {"kind": "reject", "message": "no"}),
            ("respond", {"kind": "respond", "content": "answer"}),
        )
    }
    assert read == {
        "approve": RequestStatus.APPLIED,
        "edit": RequestStatus.APPLIED,
        "reject": RequestStatus.REJECTED,
        "respond": RequestStatus.ANSWERED,
    }
    assert set(read.values()) <= APPLIED_STATUSES
    assert ApprovalRequest.model_validate({**base, "status": "pending"}).status is RequestStatus.PENDING


def test_old_outcome_events_read_as_ran_or_not_run() -> None:
    old_ran, old_not = _event("executed", ran=True, result="x"), _event("executed", ran=False, result="no")
    assert (event_kind(old_ran), event_kind(old_not)) == ("ran", "not_run")
    assert all(is_outcome(e) for e in (old_ran, old_not, _event("ran", ran=True), _event("not_run", ran=False)))
    assert not is_outcome(_event("applied")) and event_kind(_event("applied")) == "applied"
    assert "already ran" in already_applied_message("delete_ticket", "req_1", old_ran)
    assert already_applied_message("delete_ticket", "req_1", old_not) == "no"
    assert "already ran" in already_applied_message("delete_ticket", "req_1", _event("ran", ran=True, result="x"))

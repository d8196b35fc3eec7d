"""Four eyes: a request whose rule asks for several approvals runs only once enough different reviewers approved."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from crossgate import (
    AlreadyDecidedError,
    Approve,
    ConflictError,
    DecisionKind,
    DecisionNotAllowedError,
    Edit,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RequestStatus,
    Respond,
    ReviewQueue,
    SelfDecisionError,
    VerdictKind,
)
from crossgate.policy import policy_from_dict
from tests.conformance.conftest import QueueFactory
from tests.conformance.test_queue_invariants import snapshot, submit

TWO = PolicyRule(name="two-eyes", verdict=VerdictKind.ASK, tool="delete_*", approvals=2, reason="Two people sign off.")


@pytest.fixture
def queue(queue_with: QueueFactory) -> ReviewQueue:
    return queue_with(Policy(rules=(TWO,)))


def kinds(queue: ReviewQueue, request_id: str) -> list[tuple[str, str | None]]:
    return [(e.kind, e.actor) for e in queue.events(request_id=request_id)]


def test_the_call_runs_only_after_two_different_reviewers_approve(queue: ReviewQueue) -> None:
    request = submit(queue)
    assert request.approvals_required == 2
    assert request.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT), "each approves it as proposed"
    first = queue.decide(request.id, Approve(note="looks right"), reviewer="ann")
    assert first.status is RequestStatus.PENDING and first.decision is None
    assert queue.approvers(request.id) == ["ann"]
    with pytest.raises(ConflictError, match="still pending"):
        queue.mark_applied(request.id, args=request.call.args)
    before = snapshot(queue, request.id)
    with pytest.raises(ConflictError, match=r"ann approved request .* already; it needs 1 more"):
        queue.decide(request.id, Approve(), reviewer="ann")
    assert snapshot(queue, request.id) == before
    decided = queue.decide(request.id, Approve(), reviewer="bob", channel="web")
    assert decided.status is RequestStatus.DECIDED
    assert decided.decision is not None and (decided.decision.reviewer, decided.decision.channel) == ("bob", "web")
    assert kinds(queue, request.id) == [
        ("submitted", None),
        ("approved", "ann"),
        ("approved", "bob"),
        ("decided", "bob"),
    ]
    [final] = [e for e in queue.events(request_id=request.id) if e.kind == "decided"]
    assert final.payload["approvers"] == ["ann", "bob"]
    assert queue.mark_applied(request.id, args=request.call.args).status is RequestStatus.APPLIED
    assert queue.verify_audit().ok


def test_one_rejection_decides_whatever_was_approved(queue: ReviewQueue) -> None:
    request = submit(queue)
    queue.decide(request.id, Approve(), reviewer="ann")
    rejected = queue.decide(request.id, Reject(message="t3 is a real ticket."), reviewer="bob")
    assert rejected.status is RequestStatus.DECIDED and rejected.approved_args() is None
    with pytest.raises(AlreadyDecidedError):
        queue.decide(request.id, Approve(), reviewer="cy")
    assert queue.approvers(request.id) == ["ann"]


@pytest.mark.parametrize(
    ("decision", "error", "match"),
    [
        (Edit(args={"id": "t4"}), DecisionNotAllowedError, "does not allow edit"),
        (Respond(content="done"), DecisionNotAllowedError, "does not allow respond"),
        (Approve(remember=Remember()), DecisionNotAllowedError, "approve without remember"),
    ],
)
def test_edit_respond_and_remembered_approvals_are_refused_and_change_nothing(
    queue: ReviewQueue, decision: Any, error: type[Exception], match: str
) -> None:
    request = submit(queue)
    queue.decide(request.id, Approve(), reviewer="ann")
    before = snapshot(queue, request.id)
    with pytest.raises(error, match=match):
        queue.decide(request.id, decision, reviewer="bob")
    assert snapshot(queue, request.id) == before
    assert queue.approvers(request.id) == ["ann"]


def test_the_person_a_run_acts_for_is_not_one_of_the_approvers(queue: ReviewQueue) -> None:
    request = submit(queue, requested_by="pat")
    with pytest.raises(SelfDecisionError):
        queue.decide(request.id, Approve(), reviewer="pat")
    assert queue.approvers(request.id) == []


def test_reviewers_approving_at_the_same_moment_all_count_and_one_decision_is_recorded(queue: ReviewQueue) -> None:
    for round_ in range(5):
        request = submit(queue, f"t{round_}")
        start = threading.Barrier(3)
        errors: list[Exception] = []

        def approve(
            name: str,
            request_id: str = request.id,
            barrier: threading.Barrier = start,
            errors: list[Exception] = errors,
        ) -> None:
            barrier.wait()
            try:
                queue.decide(request_id, Approve(), reviewer=name)
            except Exception as exc:  # a late third approval may find it decided: that is the only allowed error
                errors.append(exc)

        threads = [threading.Thread(target=approve, args=(name,)) for name in ("ann", "bob", "cy")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert all(isinstance(e, AlreadyDecidedError) for e in errors), errors
        decided = queue.get(request.id)
        assert decided.status is RequestStatus.DECIDED and isinstance(decided.decision, Approve)
        assert [k for k, _ in kinds(queue, request.id)].count("decided") == 1
        [final] = [e for e in queue.events(request_id=request.id) if e.kind == "decided"]
        assert len(final.payload["approvers"]) >= 2 and final.actor in final.payload["approvers"]


def test_policy_files_say_how_many_approvals_a_rule_needs() -> None:
    policy = policy_from_dict({"rules": [{"name": "prod", "verdict": "ask", "tool": "deploy", "approvals": 3}]})
    assert policy.rules[0].approvals == 3
    for bad in (0, 11, "two"):
        with pytest.raises(Exception, match="approvals"):
            policy_from_dict({"rules": [{"name": "prod", "verdict": "ask", "tool": "deploy", "approvals": bad}]})

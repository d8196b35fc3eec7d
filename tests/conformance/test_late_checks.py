"""What is checked again after a call was submitted: the policy at approve and at apply, and an approval's window.

A decision is for the world as the reviewer saw it. A deny added since (a policy rule, a remembered rejection)
wins at every step, and an approval left unused past its rule's ``apply_within_seconds`` lapses.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from crossgate import (
    AlreadyAppliedError,
    Approve,
    DecisionNotAllowedError,
    Edit,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    Respond,
    ReviewQueue,
    VerdictKind,
)
from tests.conformance.conftest import QueueFactory
from tests.conformance.test_queue_invariants import call, snapshot, submit
from tests.support.clock import FakeClock


def test_an_approve_the_policy_now_denies_is_refused_and_changes_nothing(queue: ReviewQueue) -> None:
    request, other = submit(queue, "t3"), submit(queue, "t5")
    queue.add_rule(queue.new_rule(effect="deny", tool="delete_*", message="deletes are frozen this week"))
    before = snapshot(queue, request.id)
    for decision in (Approve(), Approve(remember=Remember()), Edit(args={"id": "t4"})):
        with pytest.raises(DecisionNotAllowedError, match="deletes are frozen this week"):
            queue.decide(request.id, decision, reviewer="ann")
        assert snapshot(queue, request.id) == before
    # Reject and respond run nothing, so a deny never stands in their way.
    responded = queue.decide(request.id, Respond(content="frozen; not deleted"), reviewer="ann")
    assert responded.status is RequestStatus.DECIDED
    queue.mark_applied(responded.id)
    assert queue.decide(other.id, Reject(message="no"), reviewer="ann").status is RequestStatus.DECIDED


def test_a_deny_added_after_the_approval_wins_at_apply_and_nothing_runs(queue: ReviewQueue) -> None:
    approved = queue.decide(submit(queue, "t3").id, Approve(), reviewer="ann")
    edited = queue.decide(submit(queue, "t4").id, Edit(args={"id": "t9"}), reviewer="ann")
    untouched = queue.decide(submit(queue, "t5").id, Approve(), reviewer="ann")
    frozen = queue.new_rule(
        effect="deny", tool="delete_ticket", match=RememberMatch.PATTERN, arg_patterns={"id": "t[39]"}, message="frozen"
    )
    queue.add_rule(frozen)
    with pytest.raises(RequestCancelledError, match=r"policy now denies delete_ticket \(frozen\)"):
        queue.mark_applied(approved, args={"id": "t3"})
    with pytest.raises(RequestCancelledError, match="frozen"):
        queue.mark_applied(edited.id, args={"id": "t9"})  # the edited arguments are the ones checked
    for request_id in (approved.id, edited.id):
        closed = queue.get(request_id)
        assert closed.status is RequestStatus.CANCELLED and closed.applied_at is None
        assert closed.decision is not None and closed.decision.reviewer == "ann", "who approved stays recorded"
        assert closed.resolution() == Reject(message="frozen", fingerprint=closed.fingerprint)
        assert closed.approved_args() is None
        kinds = [(e.kind, e.actor, e.payload.get("reason")) for e in queue.events(request_id=request_id)]
        assert kinds[-1] == ("cancelled", "policy", "frozen") and ("applied", "ann", None) not in kinds
        assert "applied" not in [e.kind for e in queue.events(request_id=request_id)]
        with pytest.raises(RequestCancelledError):  # every later resume is refused too
            queue.mark_applied(request_id, args=closed.call.args)
    assert queue.mark_applied(untouched, args={"id": "t5"}).status is RequestStatus.APPLIED
    assert queue.verify_audit().ok


def test_a_policy_deny_in_the_applying_process_wins_over_the_deciding_one(queue_with: QueueFactory) -> None:
    # The server that took the decision asks about everything; the agent's process, with the new
    # policy, is the one that applies it, and its policy decides.
    server = queue_with(Policy())
    request = server.decide(submit(server, "t3").id, Approve(), reviewer="ann")
    deny = PolicyRule(name="freeze", verdict=VerdictKind.DENY, tool="delete_*", reason="change freeze")
    agent = queue_with(Policy(rules=(deny,)))
    with pytest.raises(RequestCancelledError, match="change freeze"):
        agent.mark_applied(request.id, args={"id": "t3"})
    with pytest.raises(RequestCancelledError):
        server.mark_applied(request.id, args={"id": "t3"})  # closed for every process, whatever its policy
    assert server.get(request.id).status is RequestStatus.CANCELLED


LAPSING = PolicyRule(name="fresh-approvals", verdict=VerdictKind.ASK, tool="delete_*", apply_within_seconds=600)


def test_an_approval_not_applied_within_its_window_lapses_and_nothing_runs(queue_with: QueueFactory) -> None:
    clock = FakeClock()
    queue = queue_with(Policy(rules=(LAPSING,)), clock=clock)
    on_time, late, edited, rejected = (submit(queue, t) for t in ("t1", "t2", "t3", "t4"))
    assert late.apply_within_seconds == 600 and late.expires_at is None, "the window starts at the decision"
    clock.advance(3600)  # how long the request waited for a reviewer does not count
    for request in (on_time, late):
        queue.decide(request.id, Approve(), reviewer="ann")
    queue.decide(edited.id, Edit(args={"id": "t9"}), reviewer="ann")
    queue.decide(rejected.id, Reject(message="keep t4"), reviewer="ann")
    clock.advance(600)
    applied = queue.mark_applied(on_time.id, args={"id": "t1"})
    assert applied.status is RequestStatus.APPLIED, "the window's last moment is still in it"
    clock.advance(1)
    with pytest.raises(RequestExpiredError, match="approval lapsed 600 seconds after it was given"):
        queue.mark_applied(late.id, args={"id": "t2"})
    with pytest.raises(RequestExpiredError, match="lapsed"):
        queue.mark_applied(edited.id, args={"id": "t9"})
    assert queue.mark_applied(rejected.id).status is RequestStatus.APPLIED, "a rejection runs nothing, so never lapses"
    for request_id in (late.id, edited.id):
        closed = queue.get(request_id)
        assert closed.status is RequestStatus.EXPIRED and closed.applied_at is None
        assert closed.decision is not None and closed.decision.reviewer == "ann", "who approved stays recorded"
        answer = closed.resolution()
        assert isinstance(answer, Reject) and "approval lapsed" in answer.message and "delete_ticket" in answer.message
        assert [e.kind for e in queue.events(request_id=request_id)][-2:] == ["decided", "expired"]
        with pytest.raises(RequestExpiredError):  # every later resume gets the same answer
            queue.mark_applied(request_id, args=closed.call.args)
    assert queue.verify_audit().ok


def test_the_policy_default_window_applies_and_rules_without_one_never_lapse(queue_with: QueueFactory) -> None:
    clock = FakeClock()
    keep = PolicyRule(name="slow-ok", verdict=VerdictKind.ASK, tool="archive_*")
    queue = queue_with(Policy(rules=(keep,), default_apply_within_seconds=60), clock=clock)
    by_default = submit(queue, "t1")
    never = queue.submit(call("t3", tool="archive_ticket")).request
    assert never is not None and never.apply_within_seconds is None and by_default.apply_within_seconds == 60
    for request in (by_default, never):
        queue.decide(request.id, Approve(), reviewer="ann")
    clock.advance(timedelta(days=30).total_seconds())
    assert queue.mark_applied(never.id, args={"id": "t3"}).status is RequestStatus.APPLIED
    with pytest.raises(RequestExpiredError):
        queue.mark_applied(by_default.id, args={"id": "t1"})


def test_a_lapsed_approval_that_another_process_applied_first_is_already_applied(queue_with: QueueFactory) -> None:
    clock = FakeClock()
    first = queue_with(Policy(rules=(LAPSING,)), clock=clock)
    late_clock = FakeClock(clock.now)
    second = queue_with(Policy(rules=(LAPSING,)), clock=late_clock)
    request = first.decide(submit(first, "t1").id, Approve(), reviewer="ann")
    first.mark_applied(request.id, args={"id": "t1"})
    late_clock.advance(601)
    with pytest.raises(AlreadyAppliedError):
        second.mark_applied(request, args={"id": "t1"})  # the decided copy it held: the store says applied
    assert second.get(request.id).status is RequestStatus.APPLIED

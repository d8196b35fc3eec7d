"""The queue contract's checks after submission: four eyes and the late checks (the policy at approve and
at apply, and an approval's window). ``QueueContract`` includes both; they are not run on their own.

A decision is for the world as the reviewer saw it. A deny added since (a policy rule, a remembered rejection)
wins at every step, an approval left unused past its rule's ``apply_within_seconds`` lapses, and a request
whose rule asks for several approvals runs only once enough different reviewers approved.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from crossgate import (
    AlreadyAppliedError,
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
    RememberMatch,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    Respond,
    ReviewQueue,
    SelfDecisionError,
    VerdictKind,
)
from crossgate.policy import policy_from_dict
from crossgate.testing._scenarios import LAPSING, TWO, call, kinds, snapshot, submit
from crossgate.testing.clock import FakeClock
from crossgate.testing.fixtures import QueueFactory, StoreBacked


class FourEyesScenarios(StoreBacked):
    """A rule's ``approvals: N``: nothing runs before N different reviewers approved; one rejection decides."""

    # four eyes ------------------------------------------------------------------------------------------
    @pytest.fixture
    def two_eyes_queue(self, queue_with: QueueFactory) -> ReviewQueue:
        """A queue whose policy asks two reviewers to approve every delete (rule ``TWO``)."""
        return queue_with(Policy(rules=(TWO,)))

    def test_the_call_runs_only_after_two_different_reviewers_approve(self, two_eyes_queue: ReviewQueue) -> None:
        queue = two_eyes_queue
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

    def test_one_rejection_decides_whatever_was_approved(self, two_eyes_queue: ReviewQueue) -> None:
        queue = two_eyes_queue
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
        self, two_eyes_queue: ReviewQueue, decision: Any, error: type[Exception], match: str
    ) -> None:
        queue = two_eyes_queue
        request = submit(queue)
        queue.decide(request.id, Approve(), reviewer="ann")
        before = snapshot(queue, request.id)
        with pytest.raises(error, match=match):
            queue.decide(request.id, decision, reviewer="bob")
        assert snapshot(queue, request.id) == before
        assert queue.approvers(request.id) == ["ann"]

    def test_the_person_a_run_acts_for_is_not_one_of_the_approvers(self, two_eyes_queue: ReviewQueue) -> None:
        queue = two_eyes_queue
        request = submit(queue, requested_by="pat")
        with pytest.raises(SelfDecisionError):
            queue.decide(request.id, Approve(), reviewer="pat")
        assert queue.approvers(request.id) == []

    def test_reviewers_approving_at_the_same_moment_all_count_and_one_decision_is_recorded(
        self, two_eyes_queue: ReviewQueue
    ) -> None:
        queue = two_eyes_queue
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
            approvers = final.payload["approvers"]
            assert isinstance(approvers, list)
            assert len(approvers) >= 2 and final.actor in approvers

    def test_policy_files_say_how_many_approvals_a_rule_needs(self) -> None:
        policy = policy_from_dict({"rules": [{"name": "prod", "verdict": "ask", "tool": "deploy", "approvals": 3}]})
        assert policy.rules[0].approvals == 3
        for bad in (0, 11, "two"):
            with pytest.raises(Exception, match="approvals"):
                policy_from_dict({"rules": [{"name": "prod", "verdict": "ask", "tool": "deploy", "approvals": bad}]})


class LateCheckScenarios(StoreBacked):
    """The policy at approve and at apply, and an approval's window."""

    # late checks ----------------------------------------------------------------------------------------
    def test_an_approve_the_policy_now_denies_is_refused_and_changes_nothing(self, queue: ReviewQueue) -> None:
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
        assert queue.mark_applied(responded.id).status is RequestStatus.ANSWERED
        assert queue.decide(other.id, Reject(message="no"), reviewer="ann").status is RequestStatus.DECIDED

    def test_a_deny_added_after_the_approval_wins_at_apply_and_nothing_runs(self, queue: ReviewQueue) -> None:
        approved = queue.decide(submit(queue, "t3").id, Approve(), reviewer="ann")
        edited = queue.decide(submit(queue, "t4").id, Edit(args={"id": "t9"}), reviewer="ann")
        untouched = queue.decide(submit(queue, "t5").id, Approve(), reviewer="ann")
        frozen = queue.new_rule(
            effect="deny",
            tool="delete_ticket",
            match=RememberMatch.PATTERN,
            arg_patterns={"id": "t[39]"},
            message="frozen",
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

    def test_a_policy_deny_in_the_applying_process_wins_over_the_deciding_one(self, queue_with: QueueFactory) -> None:
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

    def test_an_approval_not_applied_within_its_window_lapses_and_nothing_runs(self, queue_with: QueueFactory) -> None:
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
        assert queue.mark_applied(rejected.id).status is RequestStatus.REJECTED, (
            "a rejection runs nothing, so never lapses"
        )
        for request_id in (late.id, edited.id):
            closed = queue.get(request_id)
            assert closed.status is RequestStatus.EXPIRED and closed.applied_at is None
            assert closed.decision is not None and closed.decision.reviewer == "ann", "who approved stays recorded"
            answer = closed.resolution()
            assert (
                isinstance(answer, Reject) and "approval lapsed" in answer.message and "delete_ticket" in answer.message
            )
            assert [e.kind for e in queue.events(request_id=request_id)][-2:] == ["decided", "expired"]
            with pytest.raises(RequestExpiredError):  # every later resume gets the same answer
                queue.mark_applied(request_id, args=closed.call.args)
        assert queue.verify_audit().ok

    def test_the_policy_default_window_applies_and_only_never_written_out_never_lapses(
        self, queue_with: QueueFactory
    ) -> None:
        clock = FakeClock()
        keep = PolicyRule(name="slow-ok", verdict=VerdictKind.ASK, tool="archive_*", apply_within_seconds="never")
        hour = PolicyRule(name="silent", verdict=VerdictKind.ASK, tool="close_*")
        queue = queue_with(Policy(rules=(keep, hour), default_apply_within_seconds=60), clock=clock)
        by_default = submit(queue, "t1")
        never = queue.submit(call("t3", tool="archive_ticket")).request
        unset = queue.submit(call("t2", tool="close_ticket")).request
        assert never is not None and never.apply_within_seconds is None and by_default.apply_within_seconds == 60
        assert unset is not None and unset.apply_within_seconds == 3600  # a rule that says nothing: one hour
        for request in (by_default, never):
            queue.decide(request.id, Approve(), reviewer="ann")
        clock.advance(timedelta(days=30).total_seconds())
        assert queue.mark_applied(never.id, args={"id": "t3"}).status is RequestStatus.APPLIED
        with pytest.raises(RequestExpiredError):
            queue.mark_applied(by_default.id, args={"id": "t1"})

    def test_a_lapsed_approval_that_another_process_applied_first_is_already_applied(
        self, queue_with: QueueFactory
    ) -> None:
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

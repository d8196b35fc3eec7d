"""``QueueContract``: the review queue's invariants (DESIGN.md 1, 2, 3 and 7), four eyes, and the late checks.

It runs on any store: subclass it and give ``make_store``, as for ``StoreContract``. Three parts:

- invariants: fail closed, bind the decision to the arguments that run, decide and resume once, wait, remember;
- four eyes: a request whose rule asks for several approvals runs only once enough different reviewers approved;
- late checks: what is checked again after a call was submitted (the policy at approve and at apply, and an
  approval's window). A decision is for the world as the reviewer saw it. A deny added since (a policy rule, a
  remembered rejection) wins at every step, and an approval left unused past its rule's ``apply_within_seconds``
  lapses.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import pydantic
import pytest

from crossgate import (
    AdapterError,
    AlreadyAppliedError,
    AlreadyDecidedError,
    Approve,
    ConfigurationError,
    ConflictError,
    DecisionKind,
    DecisionNotAllowedError,
    Edit,
    FingerprintMismatchError,
    InvalidArgumentsError,
    InvalidDecisionError,
    NotFoundError,
    ParkedRunClaimedError,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    Respond,
    ReviewQueue,
    SelfDecisionError,
    VerdictKind,
    parse_decision,
)
from crossgate.model import EXPIRY_MESSAGE
from crossgate.testing._scenarios import SCHEMA, call, snapshot, submit
from crossgate.testing.approvals import FourEyesScenarios, LateCheckScenarios
from crossgate.testing.clock import FakeClock
from crossgate.testing.fixtures import QueueFactory


class QueueContract(FourEyesScenarios, LateCheckScenarios):
    """The queue's guarantees on the subclass's store: every test must pass on every store.

    Provide ``make_store(tmp_path)``: a new, empty store per call. There are no capability flags.
    """

    # invariant 1: fail closed -------------------------------------------------------------------------
    @pytest.mark.parametrize(
        ("decision", "error"),
        [
            (Edit(args={"id": 3}), InvalidArgumentsError),
            (Edit(args={"id": "t1", "extra": True}), InvalidArgumentsError),
            (Edit(args={}), InvalidArgumentsError),
            (Approve(fingerprint="0" * 64), FingerprintMismatchError),
            (Respond(content="x", remember=Remember()), InvalidDecisionError),
            (Approve(remember=Remember(match=RememberMatch.PATTERN)), InvalidDecisionError),
            (Approve(remember=Remember(arg_patterns={"id": "t*"})), InvalidDecisionError),
        ],
    )
    def test_invalid_decisions_are_refused_and_change_nothing(
        self, queue: ReviewQueue, decision: Any, error: type
    ) -> None:
        request = submit(queue)
        before = snapshot(queue, request.id)
        with pytest.raises(error):
            queue.decide(request.id, decision, reviewer="ann")
        assert snapshot(queue, request.id) == before

    def test_a_decision_the_request_does_not_allow_is_refused(self, queue: ReviewQueue) -> None:
        request = submit(queue, capabilities=(DecisionKind.APPROVE, DecisionKind.REJECT))
        assert request.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT)
        before = snapshot(queue, request.id)
        for decision in (Edit(args={"id": "t1"}), Respond(content="done")):
            with pytest.raises(DecisionNotAllowedError, match="does not allow"):
                queue.decide(request.id, decision, reviewer="ann")
        assert snapshot(queue, request.id) == before

    def test_policy_rule_narrows_allowed_decisions_but_approve_and_reject_remain(
        self, queue_with: QueueFactory
    ) -> None:
        rule = PolicyRule(
            name="sql", verdict=VerdictKind.ASK, tool="delete_ticket", allowed_decisions=(DecisionKind.RESPOND,)
        )
        queue = queue_with(Policy(rules=(rule,)))
        request = submit(queue)
        assert request.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT, DecisionKind.RESPOND)
        with pytest.raises(DecisionNotAllowedError):
            queue.decide(request.id, Edit(args={"id": "t1"}), reviewer="ann")

    def test_unknown_request_is_not_found_everywhere(self, queue: ReviewQueue) -> None:
        for action in (
            lambda: queue.get("req-nope"),
            lambda: queue.decide("req-nope", Approve(), reviewer="ann"),
            lambda: queue.mark_applied("req-nope", args={}),
            lambda: queue.cancel("req-nope"),
            lambda: queue.revoke_rule("rule-nope"),
            lambda: queue.claim_parked("park-nope", owner="w"),
        ):
            with pytest.raises(NotFoundError):
                action()
        assert queue.store.audit_head()[0] == 0

    def test_malformed_decision_data_never_becomes_a_decision(self) -> None:
        for data in (
            {"kind": "approve", "extra": 1},
            {"kind": "reject"},
            {"kind": "reject", "message": ""},
            {"kind": "reject", "message": "  \n "},
            {"kind": "edit", "args": ["t1"]},
            {"kind": "yes"},
            "approve",
            True,
            None,
        ):
            with pytest.raises(pydantic.ValidationError):
                parse_decision(data)

    def test_a_reviewer_cannot_decide_their_own_request(self, queue: ReviewQueue) -> None:
        request = submit(queue, requested_by="bob")
        before = snapshot(queue, request.id)
        with pytest.raises(SelfDecisionError):
            queue.decide(request.id, Approve(), reviewer="bob")
        assert snapshot(queue, request.id) == before
        assert queue.decide(request.id, Approve(), reviewer="ann").status is RequestStatus.DECIDED

    def test_a_bad_args_schema_is_a_configuration_error_and_creates_nothing(self, queue: ReviewQueue) -> None:
        with pytest.raises(ConfigurationError):
            queue.submit(call(), args_schema={"type": "no-such-type"})
        assert queue.store.audit_head()[0] == 0

    # verdicts without a human --------------------------------------------------------------------------
    def test_allow_and_deny_verdicts_are_recorded_without_a_request(self, queue_with: QueueFactory) -> None:
        policy = Policy(
            rules=(
                PolicyRule(
                    name="no-t1",
                    verdict=VerdictKind.DENY,
                    tool="delete_ticket",
                    where=({"arg": "id", "kind": "equals", "value": "t1"},),
                    reason="t1 is a real ticket; keep it.",
                ),
                PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),
            )
        )
        queue = queue_with(policy)
        denied = queue.submit(call("t1"))
        allowed = queue.submit(call("t1", tool="read_ticket"))
        assert denied.request is None
        assert denied.verdict.kind is VerdictKind.DENY
        assert denied.verdict.reason == "t1 is a real ticket; keep it."
        assert allowed.request is None
        assert allowed.verdict.kind is VerdictKind.ALLOW
        events = queue.events()
        assert [e.kind for e in events] == ["auto_denied", "auto_allowed"]
        assert events[0].payload["tool"] == "delete_ticket"
        assert queue.pending() == []
        # What the SDK said besides the call (here a subagent's instance id) is kept with the verdict.
        with_context = call("t1").model_copy(update={"context": {"agent_id": "a-17"}})
        queue.submit(with_context)
        assert queue.events()[-1].payload["context"] == {"agent_id": "a-17"}
        assert "context" not in events[0].payload

    def test_submit_with_the_same_request_id_is_idempotent_and_refuses_other_args(self, queue: ReviewQueue) -> None:
        first = queue.submit(call("t3"), request_id="req-fixed").request
        again = queue.submit(call("t3"), request_id="req-fixed").request
        assert first == again
        with pytest.raises(FingerprintMismatchError):
            queue.submit(call("t1"), request_id="req-fixed")
        assert [e.kind for e in queue.events()] == ["submitted"]

    # invariant 2: bound to arguments ------------------------------------------------------------------
    def test_apply_checks_the_arguments_about_to_run(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        queue.decide(request.id, Approve(fingerprint=request.fingerprint), reviewer="ann")
        before = snapshot(queue, request.id)
        with pytest.raises(FingerprintMismatchError):
            queue.mark_applied(request.id, args={"id": "t1"})
        with pytest.raises(FingerprintMismatchError):
            queue.mark_applied(request.id)
        assert snapshot(queue, request.id) == before
        assert queue.mark_applied(request.id, args={"id": "t3"}).status is RequestStatus.APPLIED

    def test_an_edit_binds_the_edited_arguments_not_the_proposed_ones(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        decided = queue.decide(request.id, Edit(args={"id": "t2"}), reviewer="ann")
        assert decided.approved_args() == {"id": "t2"}
        with pytest.raises(FingerprintMismatchError):
            queue.mark_applied(request.id, args={"id": "t3"})
        assert queue.mark_applied(request.id, args={"id": "t2"}).status is RequestStatus.APPLIED
        decided_event = next(e for e in queue.events() if e.kind == "decided")
        assert decided_event.payload["diff"] == {"changed": {"id": ["t3", "t2"]}, "added": {}, "removed": {}}

    def test_nothing_runs_for_reject_respond_or_pending(self, queue: ReviewQueue) -> None:
        pending = submit(queue, "t1")
        with pytest.raises(Exception, match="still pending"):
            queue.mark_applied(pending.id, args={"id": "t1"})
        rejected = submit(queue, "t2")
        decided = queue.decide(rejected.id, Reject(message="Keep t2. Do not retry."), reviewer="ann")
        assert decided.approved_args() is None
        responded = submit(queue, "t3")
        assert queue.decide(responded.id, Respond(content="done by hand"), reviewer="ann").approved_args() is None

    # invariant 3: exactly once ------------------------------------------------------------------------
    def test_a_request_is_decided_once(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        queue.decide(request.id, Approve(), reviewer="ann")
        before = snapshot(queue, request.id)
        with pytest.raises(AlreadyDecidedError):
            queue.decide(request.id, Reject(message="no"), reviewer="bob")
        with pytest.raises(AlreadyDecidedError):
            queue.decide(request.id, Approve(), reviewer="ann")
        assert snapshot(queue, request.id) == before
        queue.mark_applied(request.id, args={"id": "t3"})
        with pytest.raises(AlreadyAppliedError):
            queue.decide(request.id, Approve(), reviewer="ann")
        with pytest.raises(AlreadyAppliedError):
            queue.mark_applied(request.id, args={"id": "t3"})

    def test_racing_reviewers_in_threads_exactly_one_wins(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        barrier = threading.Barrier(8)
        outcomes: list[str] = []

        def decide(i: int) -> None:
            barrier.wait()
            try:
                queue.decide(request.id, Reject(message=f"reviewer {i} says no"), reviewer=f"r{i}")
                outcomes.append("won")
            except AlreadyDecidedError:
                outcomes.append("conflict")

        threads = [threading.Thread(target=decide, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["conflict"] * 7 + ["won"]
        assert [e.kind for e in queue.events()].count("decided") == 1

    def test_a_parked_run_is_resumed_once(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        parked = queue.park(framework="langgraph", run="run-1", request_ids=[request.id], state="{}")
        assert not queue.is_ready(parked)
        queue.decide(request.id, Approve(), reviewer="ann")
        assert [p.id for p in queue.ready_runs()] == [parked.id]
        queue.claim_parked(parked.id, owner="w1")
        with pytest.raises(ParkedRunClaimedError):
            queue.claim_parked(parked.id, owner="w2")
        queue.finish_parked(parked.id, owner="w1")
        with pytest.raises(ParkedRunClaimedError, match="resumed"):
            queue.claim_parked(parked.id, owner="w2")
        assert queue.ready_runs() == []

    def test_park_refuses_unknown_requests(self, queue: ReviewQueue) -> None:
        with pytest.raises(NotFoundError):
            queue.park(framework="langgraph", run="r", request_ids=["req-ghost"], state="{}")
        assert queue.parked_runs() == []

    def test_prepared_requests_are_stored_with_their_parked_run_in_one_step(self, queue: ReviewQueue) -> None:
        first = queue.prepare(call("t3"), args_schema=SCHEMA, request_id="req-t3")
        second = queue.prepare(call("t1"), args_schema=SCHEMA, request_id="req-t1")
        assert first.request is not None and second.request is not None
        assert (first.stored, second.stored) == (False, False)
        assert queue.pending() == [] and queue.events() == []  # prepared is not stored
        parked = queue.park(
            framework="langgraph",
            run="run-1",
            request_ids=["req-t3", "req-t1"],
            state="{}",
            new_requests=[first.request, second.request],
        )
        assert [r.id for r in queue.pending()] == ["req-t3", "req-t1"]
        assert [(e.kind, e.request_id) for e in queue.events()] == [
            ("submitted", "req-t3"),
            ("submitted", "req-t1"),
            ("run_parked", None),
        ]
        assert queue.get_parked(parked.id).request_ids == ("req-t3", "req-t1")
        again = queue.prepare(call("t3"), args_schema=SCHEMA, request_id="req-t3")
        assert again.stored and again.request == queue.get("req-t3")
        assert queue.verify_audit().ok

    def test_parking_with_a_request_that_exists_stores_nothing(self, queue: ReviewQueue) -> None:
        taken = submit(queue, "t3", request_id="req-t3")
        fresh = queue.prepare(call("t1"), args_schema=SCHEMA, request_id="req-t1").request
        assert fresh is not None
        head = queue.store.audit_head()
        with pytest.raises(ConflictError):
            queue.park(
                framework="langgraph",
                run="run-1",
                request_ids=["req-t1", "req-t3"],
                state="{}",
                new_requests=[fresh, taken],
            )
        assert queue.store.audit_head() == head
        assert queue.store.get_request("req-t1") is None
        assert queue.parked_runs() == []

    def test_park_refuses_new_requests_it_does_not_list(self, queue: ReviewQueue) -> None:
        fresh = queue.prepare(call("t1"), args_schema=SCHEMA, request_id="req-t1").request
        assert fresh is not None
        with pytest.raises(AdapterError, match="req-t1"):
            queue.park(framework="langgraph", run="run-1", request_ids=[], state="{}", new_requests=[fresh])
        assert queue.store.get_request("req-t1") is None and queue.parked_runs() == []

    # expiry and cancel --------------------------------------------------------------------------------
    def test_expired_requests_refuse_decisions_and_answer_as_rejections(self, queue_with: QueueFactory) -> None:
        rule = PolicyRule(name="quick", verdict=VerdictKind.ASK, tool="*", timeout_seconds=60)
        clock = FakeClock()
        queue = queue_with(Policy(rules=(rule,)), clock=clock)
        request = submit(queue)
        assert request.expires_at == clock.now + timedelta(seconds=60)
        clock.advance(61)
        before = snapshot(queue, request.id)
        with pytest.raises(RequestExpiredError):
            queue.decide(request.id, Approve(), reviewer="ann")
        assert snapshot(queue, request.id) == before
        [expired] = queue.expire_overdue()
        assert expired.status is RequestStatus.EXPIRED
        resolution = expired.resolution()
        assert isinstance(resolution, Reject)
        assert resolution.message == EXPIRY_MESSAGE
        assert "Do not retry" in resolution.message
        assert queue.expire_overdue() == []
        with pytest.raises(RequestExpiredError):
            queue.decide(request.id, Approve(), reviewer="ann")
        with pytest.raises(RequestExpiredError):
            queue.mark_applied(request.id, args={"id": "t3"})

    def test_an_adapters_own_pending_limit_shortens_the_rules_timeout(self, queue_with: QueueFactory) -> None:
        rule = PolicyRule(name="hour", verdict=VerdictKind.ASK, tool="*", timeout_seconds=3600)
        queue = queue_with(Policy(rules=(rule,)))
        held = queue.submit(call("t1"), timeout_seconds=30).request
        longer = queue.submit(call("t2"), timeout_seconds=7200).request
        plain = queue.submit(call("t3")).request
        assert held is not None and longer is not None and plain is not None
        assert held.expires_at is not None and (held.expires_at - held.created_at).total_seconds() == 30
        assert longer.expires_at is not None and (longer.expires_at - longer.created_at).total_seconds() == 3600
        assert plain.expires_at is not None and (plain.expires_at - plain.created_at).total_seconds() == 3600
        unlimited = queue_with(Policy()).submit(call("t4"), timeout_seconds=45).request
        assert unlimited is not None and unlimited.expires_at is not None
        assert (unlimited.expires_at - unlimited.created_at).total_seconds() == 45

    def test_cancelled_requests_refuse_decisions(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        cancelled = queue.cancel(request.id, reason="The run was stopped.", actor="ops")
        assert cancelled.status is RequestStatus.CANCELLED
        assert isinstance(cancelled.resolution(), Reject)
        with pytest.raises(RequestCancelledError):
            queue.decide(request.id, Approve(), reviewer="ann")
        with pytest.raises(RequestCancelledError):
            queue.cancel(request.id)

    # waiting -----------------------------------------------------------------------------------------
    @pytest.mark.asyncio
    async def test_wait_wakes_when_another_thread_decides(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        timer = threading.Timer(0.05, lambda: queue.decide(request.id, Approve(), reviewer="ann"))
        timer.start()
        decided = await queue.wait(request.id, timeout=10)
        timer.join()
        assert decided.status is RequestStatus.DECIDED
        assert queue.waiting == 0

    @pytest.mark.asyncio
    async def test_wait_times_out_with_the_request_still_pending(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        waited = await queue.wait(request.id, timeout=0.05)
        assert waited.status is RequestStatus.PENDING
        assert queue.waiting == 0

    @pytest.mark.asyncio
    async def test_many_waiters_on_one_request_all_wake(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        waiters = [asyncio.create_task(queue.wait(request.id, timeout=10)) for _ in range(50)]
        await asyncio.sleep(0.02)
        queue.decide(request.id, Reject(message="no"), reviewer="ann")
        results = await asyncio.gather(*waiters)
        assert {r.status for r in results} == {RequestStatus.DECIDED}

    @pytest.mark.asyncio
    async def test_wait_expires_an_overdue_request(self, queue_with: QueueFactory) -> None:
        rule = PolicyRule(name="quick", verdict=VerdictKind.ASK, tool="*", timeout_seconds=0.05)
        queue = queue_with(Policy(rules=(rule,)))
        request = submit(queue)
        waited = await queue.wait(request.id, timeout=10)
        assert waited.status is RequestStatus.EXPIRED
        assert isinstance(waited.resolution(), Reject)

    def test_wait_blocking_wakes_on_decision(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        timer = threading.Timer(0.05, lambda: queue.decide(request.id, Approve(), reviewer="ann"))
        timer.start()
        assert queue.wait_blocking(request.id, timeout=10).status is RequestStatus.DECIDED
        timer.join()

    # remember -----------------------------------------------------------------------------------------
    def test_remembered_approval_for_the_run_allows_later_calls_in_that_run_only(self, queue: ReviewQueue) -> None:
        request = submit(queue, "t3")
        whole_tool = Remember(scope=RememberScope.RUN, match=RememberMatch.TOOL)
        queue.decide(request.id, Approve(remember=whole_tool), reviewer="ann")
        [rule] = queue.rules()
        assert rule.source_request == request.id
        assert queue.evaluate(call("t9")).kind is VerdictKind.ALLOW
        assert queue.evaluate(call("t9", run="run-2")).kind is VerdictKind.ASK
        queue.revoke_rule(rule.id, actor="ann")
        assert queue.evaluate(call("t9")).kind is VerdictKind.ASK

    def test_remembered_exact_arguments_cover_only_those_arguments(self, queue: ReviewQueue) -> None:
        request = submit(queue, "t3")
        queue.decide(request.id, Approve(remember=Remember()), reviewer="ann")  # the default: these arguments
        assert queue.rules()[0].match is RememberMatch.EXACT
        assert queue.evaluate(call("t3", run="other")).kind is VerdictKind.ALLOW
        assert queue.evaluate(call("t4", run="other")).kind is VerdictKind.ASK

    def test_remembered_rejection_denies_with_the_reviewers_message(self, queue: ReviewQueue) -> None:
        request = submit(queue, "t1")
        message = "Never delete tickets from this agent. Ask the user instead."
        everything = Remember(this_agent_only=True, match=RememberMatch.TOOL)
        queue.decide(request.id, Reject(message=message, remember=everything), reviewer="ann")
        verdict = queue.evaluate(call("t7", run="other"))
        assert verdict.kind is VerdictKind.DENY
        assert verdict.reason == message
        assert queue.evaluate(call("t7", agent="someone-else")).kind is VerdictKind.ASK

    def test_remember_once_creates_no_standing_rule(self, queue: ReviewQueue) -> None:
        request = submit(queue)
        queue.decide(request.id, Approve(remember=Remember(scope=RememberScope.ONCE)), reviewer="ann")
        assert queue.rules() == []

    def test_new_rule_builds_only_allow_or_deny_rules(self, queue: ReviewQueue) -> None:
        rule = queue.new_rule(effect="deny", tool="delete_*", message="never", arg_patterns={"id": "prod-*"})
        assert (rule.effect, rule.tool, rule.arg_patterns, rule.created_at is not None) == (
            VerdictKind.DENY,
            "delete_*",
            {"id": "prod-*"},
            True,
        )
        with pytest.raises(pydantic.ValidationError, match="effect"):
            queue.new_rule(effect="ask", tool="delete_*")
        assert queue.rules(include_revoked=True) == []  # building stores nothing; add_rule does

    def test_an_edit_to_arguments_the_policy_denies_is_refused_and_changes_nothing(
        self, queue_with: QueueFactory
    ) -> None:
        deny = PolicyRule(
            name="keep-production",
            verdict=VerdictKind.DENY,
            tool="delete_ticket",
            reason="production tickets (t9…) are never deleted",
            where=({"arg": "id", "kind": "glob", "pattern": "t9*"},),
        )
        ask = PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket")
        queue = queue_with(Policy(rules=(deny, ask)))
        request = submit(queue, "t3")
        before = snapshot(queue, request.id)
        with pytest.raises(DecisionNotAllowedError, match="are never deleted"):
            queue.decide(request.id, Edit(args={"id": "t91"}), reviewer="ann")
        assert snapshot(queue, request.id) == before
        with pytest.raises(DecisionNotAllowedError, match="policy denies"):
            queue.decide(request.id, Edit(args={"id": "t99"}, remember=Remember()), reviewer="ann")
        assert snapshot(queue, request.id) == before
        edited = queue.decide(request.id, Edit(args={"id": "t2"}), reviewer="ann")  # still asked: the reviewer decides
        assert edited.approved_args() == {"id": "t2"}

    def test_an_edit_to_arguments_a_remembered_rejection_denies_is_refused(self, queue: ReviewQueue) -> None:
        first = submit(queue, "t1")
        queue.decide(
            first.id, Reject(message="t1 is real", remember=Remember(match=RememberMatch.EXACT)), reviewer="ann"
        )
        request = submit(queue, "t3")
        before = snapshot(queue, request.id)
        with pytest.raises(DecisionNotAllowedError, match="t1 is real"):
            queue.decide(request.id, Edit(args={"id": "t1"}), reviewer="bob")
        assert snapshot(queue, request.id) == before

    def test_a_standing_allow_never_lifts_a_policy_deny(self, queue_with: QueueFactory) -> None:
        deny = PolicyRule(
            name="no-deletes-of-t1",
            verdict=VerdictKind.DENY,
            tool="delete_ticket",
            where=({"arg": "id", "kind": "equals", "value": "t1"},),
        )
        queue = queue_with(Policy(rules=(deny,)))
        request = submit(queue, "t3")
        queue.decide(request.id, Approve(remember=Remember()), reviewer="ann")
        assert queue.evaluate(call("t3")).kind is VerdictKind.ALLOW
        assert queue.evaluate(call("t1")).kind is VerdictKind.DENY

    # invariant 7: everything recorded -----------------------------------------------------------------
    def test_the_log_records_every_step_and_verifies(self, queue: ReviewQueue) -> None:
        request = submit(queue, requested_by="agent-7")
        queue.decide(request.id, Edit(args={"id": "t2"}, note="t3 is the wrong one"), reviewer="ann", channel="web")
        queue.mark_applied(request.id, args={"id": "t2"}, actor="worker")
        queue.record_outcome(request.id, ran=True, result="deleted ticket t2")
        events = queue.events(request_id=request.id)
        assert [e.kind for e in events] == ["submitted", "decided", "applied", "ran"]
        assert events[0].actor == "agent-7"
        assert (events[1].actor, events[1].channel) == ("ann", "web")
        assert events[1].payload["note"] == "t3 is the wrong one"
        assert events[3].payload == {"ran": True, "result": "deleted ticket t2", "error": None}
        report = queue.verify_audit()
        assert report.ok
        assert report.checked == 4

"""``ReviewQueue``: the one place where requests are created, decided, applied and audited.

It enforces DESIGN.md's invariants 1 (fail closed), 2 (bound to arguments), 3 (exactly once) and
7 (everything recorded). Adapters, the server and the CLI only call it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from crossgate import tracing
from crossgate._approvals import ApprovalsMixin
from crossgate._parked_runs import ParkedRunsMixin
from crossgate._policies import PoliciesMixin
from crossgate._queue_base import call_payload, clip_text
from crossgate._refusals import RefusalsMixin
from crossgate._signing import SigningMixin
from crossgate._standing_rules import StandingRulesMixin
from crossgate.audit import AuditReport, verify_log
from crossgate.authority.claims import ReviewerKind
from crossgate.clock import Clock, new_id, utc_now
from crossgate.decisions import AnyDecision, check_decision, check_open, check_schema, decision_summary
from crossgate.errors import (
    AlreadyAppliedError,
    ConflictError,
    DecisionNotAllowedError,
    FingerprintMismatchError,
    InvalidDecisionError,
    RequestCancelledError,
    RequestExpiredError,
)
from crossgate.fingerprint import fingerprint
from crossgate.limits import DEFAULT_LIMITS, InputLimits, check_seconds, storable_text
from crossgate.model import (
    ALL_DECISIONS,
    APPROVAL_LAPSED_MESSAGE,
    CANCEL_MESSAGE,
    EXPIRY_MESSAGE,
    ApprovalRequest,
    Approve,
    DecisionKind,
    Edit,
    Event,
    JsonObject,
    RememberScope,
    RequestStatus,
    ToolCall,
    Verdict,
    VerdictKind,
    applied_status,
    outcome_kind,
)
from crossgate.outcomes import outcome_in
from crossgate.policy.index import StandingRuleIndex
from crossgate.policy.rules import Policy
from crossgate.stores.base import Page, RequestQuery, Store
from crossgate.waiting import WaitRegistry

if TYPE_CHECKING:
    from crossgate.authority import Authority, TrustedKeys

REQUESTED_BY = "requested_by"
"""The context key under which a call carries who its run acts for (``submit(requested_by=...)``)."""
REFUSED_MESSAGE = (
    "crossgate refused this tool call without asking anyone, so it was not run: {problem}. Do not retry it as it is."
)
"""What the model reads for a call the input limits refuse (see ``crossgate.limits``)."""
REFUSED_FIELDS = ("framework", "tool", "call_id", "agent")
"""What the event of a refused call keeps of it: not the arguments, which were the problem."""
REQUIRED_DECISIONS = (DecisionKind.APPROVE, DecisionKind.REJECT)
"""Every adapter can express these; a request always allows at least them."""


@dataclass(frozen=True, slots=True)
class Submission:
    """What ``submit`` returns: the verdict, and the pending request when the verdict is ask."""

    verdict: Verdict
    request: ApprovalRequest | None = None
    stored: bool = True
    """False for a request :meth:`ReviewQueue.prepare` built and nobody stored yet."""


class ReviewQueue(ApprovalsMixin, StandingRulesMixin, ParkedRunsMixin, SigningMixin, RefusalsMixin, PoliciesMixin):
    """Submit calls, decide requests exactly once, wait for decisions, and keep the audit chain.

    Approvals by several reviewers, standing rules, parked runs, signing, the record of a gate's refusals
    and which policy it evaluates are in their own modules (``_approvals``, ``_standing_rules``,
    ``_parked_runs``, ``_signing``, ``_refusals``, ``_policies``). With ``authority`` (the review server's
    key, or an operator's), every decision and standing rule it records is signed.
    """

    def __init__(
        self,
        store: Store,
        policy: Policy | None = None,
        *,
        clock: Clock = utc_now,
        limits: InputLimits = DEFAULT_LIMITS,
        authority: Authority | None = None,
        trusted: TrustedKeys | None = None,
        head_file: str | os.PathLike[str] | None = None,
    ) -> None:
        """``policy``: a local policy (development, tests). Without one the queue evaluates the store's current
        signed version (see :mod:`crossgate.policy.versions`), verified with ``trusted`` (default: the keys
        pinned in ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``_FILE``, else ``authority``'s), or the default policy
        (ask for every call) while none is stored. ``authority``: the private key of a server or an operator;
        the queue then signs an audit checkpoint after each decision and standing rule it records. ``head_file``:
        where its state head signer remembers its newest head (a server's own file, read before it first signs;
        see :meth:`crossgate.state_head.HeadSigner.keep_in`).
        """
        super().__init__(store, clock=clock, limits=limits)
        self._head_file = head_file
        self._use_policy(policy, trusted, authority)
        self.authority = authority
        self._waits = WaitRegistry(store)
        # The active standing rules as of a rules version: every rule change bumps it in the same
        # transaction, so an unchanged version (from any process) means unchanged rules.
        self._rules_cache: tuple[int, StandingRuleIndex] | None = None
        self.sign_state_head()  # gates on this store see a fresh head from the start

    def close(self) -> None:
        """Stop the wake-up watcher and close the store."""
        self._waits.close()
        self.store.close()

    # policy -------------------------------------------------------------------------------------
    def evaluate(self, call: ToolCall) -> Verdict:
        """The policy's verdict for ``call`` with the current standing rules; records nothing.

        A deny, with the refusal as the reason, while the store's current policy version does not verify.
        """
        with tracing.span("crossgate.evaluate", call=call) as span:
            version = self.store.rules_version()
            policy = self._policies.at(version)[0]
            verdict = policy.evaluate(call, self._active_rules(version), now=self.now())
            if span is not None:
                tracing.set_attributes(span, tracing.verdict_attributes(verdict))
            return verdict

    def _active_rules(self, version: int | None = None) -> StandingRuleIndex:
        # The version is read before the rules: a rule added in between is cached under the older
        # version, which no longer matches on the next call, so a stale list is never kept.
        version = self.store.rules_version() if version is None else version
        cached = self._rules_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        rules = StandingRuleIndex(self.store.list_rules())  # indexed by tool once per change, not per call
        self._rules_cache = (version, rules)
        return rules

    def submit(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        """Evaluate ``call``; record allow and deny, or create a pending request for ask.

        ``capabilities`` are the decisions the adapter can express for this call; the request allows
        those the policy rule allows too. ``request_id`` makes submission idempotent: an adapter that
        asks again for the same call (a re-run node, a re-asked permission) gets the same request back,
        and a different call under the same id is refused. ``timeout_seconds`` is the adapter's own limit
        on how long the request may stay pending (a call it holds inline and cannot resume later): the
        request expires at the earlier of it and the policy rule's timeout. ``verdict`` is what
        :meth:`evaluate` returned for this very call a moment ago (an SDK that asks whether a call needs
        approval before it runs the tool): it is taken instead of evaluating the call a second time.
        """
        with tracing.span("crossgate.submit", call=call) as span:
            submission = self.prepare(
                call,
                args_schema=args_schema,
                description=description,
                requested_by=requested_by,
                capabilities=capabilities,
                request_id=request_id,
                timeout_seconds=timeout_seconds,
                verdict=verdict,
            )
            if span is not None:
                tracing.set_attributes(span, tracing.submission_attributes(submission.verdict, submission.request))
            if submission.request is not None and not submission.stored:
                self.store.insert_request(submission.request, self._submitted_event(submission.request))
                return Submission(submission.verdict, submission.request)
            return submission

    def prepare(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        """:meth:`submit` without storing a new request: ``park(new_requests=...)`` stores it with the run.

        Allow and deny are recorded as ``submit`` records them; a request that exists under
        ``request_id`` comes back as it is stored. A new request comes back with ``stored=False``.
        ``requested_by`` is also put in the call's context (key ``requested_by``), so policy rules can
        test who the run acts for.
        """
        check_schema(args_schema)
        check_seconds(timeout_seconds, "timeout_seconds")
        if (problem := self.limits.call_problem(call)) is not None:
            return self._refuse(call, problem)
        if requested_by is not None and call.context.get(REQUESTED_BY) != requested_by:
            call = call.model_copy(update={"context": {**call.context, REQUESTED_BY: requested_by}})
            verdict = None  # judged without who the run acts for, which rules may test
        if request_id is not None and (existing := self.store.get_request(request_id)) is not None:
            if existing.fingerprint != call.fingerprint:
                raise FingerprintMismatchError(
                    f"request {request_id} exists for other arguments of {existing.call.tool}; refusing to reuse it"
                )
            return Submission(_verdict_of(existing), existing)
        if verdict is None:
            verdict = self.evaluate(call)
        now = self.now()
        if verdict.kind is not VerdictKind.ASK:
            kind = "auto_allowed" if verdict.kind is VerdictKind.ALLOW else "auto_denied"
            payload = {**call_payload(call), "reason": verdict.reason, "rule": verdict.rule}
            # Not waited for: nothing depends on the record of an allow or a deny, and it is committed
            # before any later write of this store (see Store.enqueue_event).
            self.store.enqueue_event(self._event(kind, run=call.run, actor="policy", channel="policy", payload=payload))
            return Submission(verdict)
        allowed = tuple(k for k in verdict.allowed_decisions if k in capabilities)
        if verdict.approvals > 1:  # each reviewer approves the call as proposed, or rejects it
            allowed = tuple(k for k in allowed if k in REQUIRED_DECISIONS)
        for required in REQUIRED_DECISIONS:
            if required not in allowed:
                allowed = (*allowed, required)
        limits = [t for t in (verdict.timeout_seconds, timeout_seconds) if t]
        timeout = min(limits) if limits else None
        request = ApprovalRequest(
            id=request_id or new_id("req"),
            call=call,
            fingerprint=call.fingerprint,
            reason=verdict.reason,
            rule=verdict.rule,
            description=description or verdict.description,
            allowed_decisions=tuple(k for k in ALL_DECISIONS if k in allowed),
            args_schema=args_schema,
            requested_by=requested_by,
            created_at=now,
            expires_at=now + timedelta(seconds=timeout) if timeout else None,
            apply_within_seconds=verdict.apply_within_seconds,
            approvals_required=verdict.approvals,
        )
        return Submission(verdict, request, stored=False)

    def _refuse(self, call: ToolCall, problem: str) -> Submission:
        """Deny a call over the input limits without asking anyone; the event records why, not the arguments."""
        reason = storable_text(REFUSED_MESSAGE.format(problem=problem)) or ""
        payload: JsonObject = {
            **{k: storable_text(v) for k, v in call_payload(call).items() if k in REFUSED_FIELDS},
            "reason": reason,
            "rule": None,
        }
        self.store.append_event(
            self._event("auto_denied", run=storable_text(call.run), actor="policy", channel="policy", payload=payload)
        )
        return Submission(Verdict(kind=VerdictKind.DENY, reason=reason))

    # reading ------------------------------------------------------------------------------------
    def list_requests(self, query: RequestQuery | None = None) -> Page[ApprovalRequest]:
        """One page of requests (newest first unless the query says otherwise)."""
        return self.store.list_requests(query or RequestQuery())

    def pending(
        self,
        *,
        framework: str | None = None,
        tool: str | None = None,
        agent: str | None = None,
        run: str | None = None,
    ) -> list[ApprovalRequest]:
        """Every pending request, oldest first, optionally only those of one framework, tool, agent or run."""
        items: list[ApprovalRequest] = []
        cursor: str | None = None
        while True:
            query = RequestQuery(
                statuses=(RequestStatus.PENDING,),
                framework=framework,
                tool=tool,
                agent=agent,
                run=run,
                newest_first=False,
                limit=500,
                cursor=cursor,
            )
            page = self.list_requests(query)
            items.extend(page.items)
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor

    # deciding -----------------------------------------------------------------------------------
    def decide(
        self,
        request_id: str,
        decision: AnyDecision,
        *,
        reviewer: str,
        channel: str = "api",
        reviewer_kind: ReviewerKind = ReviewerKind.REVIEWER,
    ) -> ApprovalRequest:
        """Record ``decision`` exactly once; refuse anything invalid and change nothing then.

        ``reviewer`` must be an authenticated name (the server's reviewer, or the operator holding the key,
        ``reviewer_kind=operator``); the queue's authority signs it with the decision.
        """
        self.limits.check_decision(decision)
        request = self.get(request_id)
        attributes = tracing.decision_attributes(decision.kind, channel, reviewer_kind.value)
        with tracing.span(
            "crossgate.decide", request=request, attributes=attributes, parent=self._traceparent(request)
        ):
            return self._decide(request, decision, reviewer=reviewer, channel=channel, reviewer_kind=reviewer_kind)

    def _traceparent(self, request: ApprovalRequest) -> str | None:
        """The trace context stored with the request's ``submitted`` event (read only while tracing is on)."""
        if not tracing.enabled():
            return None
        events = self.store.list_events(request_id=request.id, limit=1)
        return tracing.stored_context(events[0].payload) if events else None

    def _decide(
        self,
        request: ApprovalRequest,
        decision: AnyDecision,
        *,
        reviewer: str,
        channel: str,
        reviewer_kind: ReviewerKind,
    ) -> ApprovalRequest:
        now = self.now()
        check_open(request, now)
        check_decision(request, decision, reviewer)
        if isinstance(decision, Approve | Edit):
            self._check_policy_allows(request, decision)
        stamped = decision.model_copy(
            update={"fingerprint": request.fingerprint, "reviewer": reviewer, "channel": channel, "decided_at": now}
        )
        if isinstance(stamped, Approve) and request.approvals_required > 1:
            return self._approve_in_turn(request, stamped, reviewer_kind)
        token = self._sign_decision(request, stamped, reviewer_kind)
        return self._record_decision(request, stamped, signatures=() if token is None else (token,))

    def _record_decision(
        self,
        request: ApprovalRequest,
        stamped: AnyDecision,
        extra: JsonObject | None = None,
        *,
        signatures: tuple[str, ...] = (),
    ) -> ApprovalRequest:
        """Store a checked, stamped decision (and its tokens) with its ``decided`` event, exactly once."""
        assert stamped.reviewer is not None
        assert stamped.decided_at is not None
        reviewer, now = stamped.reviewer, stamped.decided_at
        update = {"status": RequestStatus.DECIDED, "decision": stamped, "decided_at": now, "signatures": signatures}
        decided = request.model_copy(update=update)
        payload = {**decision_summary(stamped, request.call.args), **(extra or {})}
        event = self._event("decided", request, actor=reviewer, channel=stamped.channel, payload=payload)
        sealed = self.store.update_request(decided, (RequestStatus.PENDING,), event)
        if sealed is None:
            check_open(self.get(request.id), now)
            raise ConflictError(f"request {request.id} changed while it was being decided")
        self._sign_own(sealed)
        if stamped.remember is not None and stamped.remember.scope is not RememberScope.ONCE:
            self._remember(decided, stamped, reviewer)
        self._waits.notify(request.id)
        return decided

    def _check_policy_allows(self, request: ApprovalRequest, decision: Approve | Edit) -> None:
        # A person cannot approve past a deny: the policy (or a standing rule) may have changed since the
        # call was submitted, and an edit is a new call. Reject and respond run nothing, so stay allowed.
        args = decision.args if isinstance(decision, Edit) else request.call.args
        denial = self.policy_denial(request, args)
        if denial is not None:
            which = "the edited arguments" if isinstance(decision, Edit) else "these arguments"
            raise DecisionNotAllowedError(
                f"request {request.id}: the policy denies {request.call.tool} with {which} ({denial}); "
                "reject it, or change the policy first"
            )

    def policy_denial(self, request: ApprovalRequest, args: JsonObject | None = None) -> str | None:
        """Why the policy denies ``request``'s call (with ``args`` instead, if given) now; None unless it does.

        A request is only made for calls the policy asked about, so a denial means a rule (or a remembered
        rejection) added since: approving the call as proposed would be refused.
        """
        call = request.call
        if args is not None and args is not call.args:
            call = call.model_copy(update={"args": args})
        verdict = self.evaluate(call)
        if verdict.kind is not VerdictKind.DENY:
            return None
        return verdict.reason or (f"rule {verdict.rule}" if verdict.rule else f"the policy denies {call.tool}")

    def mark_applied(
        self, request_id: str | ApprovalRequest, *, args: JsonObject | None = None, actor: str | None = None
    ) -> ApprovalRequest:
        """Record that the decision reached the SDK; exactly once.

        The request's status becomes what that means for the call: ``applied`` (an approve or edit, about
        to run), ``rejected`` or ``answered`` (nothing runs); the event is ``applied`` for all three.

        For approve and edit, ``args`` are the arguments about to run; they must be the approved (or
        edited) ones, or FingerprintMismatchError is raised and nothing is recorded. ``request_id`` may
        be the decided request the caller holds (a decision never changes once made): it is not read
        again, and the compare-and-set on the stored row still lets only one caller apply it.

        An approve or edit is checked once more before it may run: past its rule's ``apply_within_seconds``
        it lapses (the request expires, RequestExpiredError), and if the policy denies the call now the
        request is cancelled with the policy's reason (RequestCancelledError). Either way nothing runs,
        and the closed request's ``resolution()`` is the rejection the SDK should get.
        """
        if isinstance(request_id, ApprovalRequest) and request_id.status is RequestStatus.DECIDED:
            request = request_id
        else:
            request = self.get(request_id.id if isinstance(request_id, ApprovalRequest) else request_id)
        with tracing.span("crossgate.apply", request=request) as span:
            applied = self._mark_applied(request, args, actor)
            if span is not None:
                tracing.set_attributes(span, {"crossgate.request.status": applied.status.value})
            return applied

    def _mark_applied(self, request: ApprovalRequest, args: JsonObject | None, actor: str | None) -> ApprovalRequest:
        request_id = request.id
        if request.is_applied:
            raise AlreadyAppliedError(f"request {request_id} was already applied; nothing runs twice")
        if request.status is RequestStatus.PENDING:
            raise ConflictError(f"request {request_id} is still pending; nothing may run yet")
        if request.status is RequestStatus.EXPIRED:
            raise RequestExpiredError(f"request {request_id} expired; answer the SDK with its rejection")
        if request.status is RequestStatus.CANCELLED:
            raise RequestCancelledError(f"request {request_id} was cancelled; answer the SDK with its rejection")
        approved = request.approved_fingerprint()
        if approved is not None:
            if args is None:
                raise FingerprintMismatchError(f"request {request_id}: pass the arguments about to run")
            if fingerprint(request.call.tool, args) != approved:
                raise FingerprintMismatchError(
                    f"request {request_id}: the arguments about to run are not the ones the reviewer approved"
                )
            self._refuse_if_lapsed(request)
            self._refuse_if_denied_now(request, args)
        now = self.now()
        assert request.decision is not None  # a decided request has its decision
        status = applied_status(request.decision.kind)
        applied = request.model_copy(update={"status": status, "applied_at": now})
        payload: JsonObject = {"kind": request.decision.kind.value}
        event = self._event("applied", request, actor=actor, channel=request.call.framework, payload=payload)
        if self.store.update_request(applied, (RequestStatus.DECIDED,), event) is None:
            raise AlreadyAppliedError(f"request {request_id} was already applied; nothing runs twice")
        self._waits.notify(request_id)
        return applied

    def _refuse_if_lapsed(self, request: ApprovalRequest) -> None:
        # An approval is for the world as the reviewer saw it: one left unused past its rule's window
        # (a run parked for days) expires instead of running, and every later resume gets the same answer.
        window = request.apply_within_seconds
        if window is None or request.decided_at is None:
            return
        if self.now() <= request.decided_at + timedelta(seconds=window):
            return
        reason = APPROVAL_LAPSED_MESSAGE.format(tool=request.call.tool, seconds=window)
        self._close_unapplied(request, RequestStatus.EXPIRED, reason, actor="crossgate")
        raise RequestExpiredError(
            f"request {request.id}: its approval lapsed {window:g} seconds after it was given, before it was applied"
        )

    def _refuse_if_denied_now(self, request: ApprovalRequest, args: JsonObject) -> None:
        # The policy decides at apply time too: a deny added after the approval (a new policy rule, a
        # remembered rejection) wins, however long the run was parked. The request closes as cancelled,
        # so every later resume answers the SDK with the policy's reason and nothing runs.
        denial = self.policy_denial(request, args)
        if denial is None:
            return
        self._close_unapplied(request, RequestStatus.CANCELLED, denial, actor="policy")
        raise RequestCancelledError(
            f"request {request.id}: the policy now denies {request.call.tool} ({denial}); it was approved, "
            "and is cancelled instead of run"
        )

    def _close_unapplied(self, request: ApprovalRequest, status: RequestStatus, reason: str, *, actor: str) -> None:
        """Close a decided request that must not run; AlreadyAppliedError if another caller applied it first."""
        closed = self._close(request, status, reason, actor=actor, was=RequestStatus.DECIDED)
        if closed is None and self.get(request.id).is_applied:
            raise AlreadyAppliedError(f"request {request.id} was already applied; nothing runs twice")

    def record_outcome(
        self,
        request_id: str | ApprovalRequest | None,
        *,
        ran: bool,
        result: str | None = None,
        error: str | None = None,
        call: ToolCall | None = None,
    ) -> None:
        """Record what happened when the SDK got its answer: whether the tool ran, a result summary, an error.

        The event is ``ran`` or ``not_run`` (its payload keeps ``ran`` too, as events before that split had).

        ``request_id`` may be the request the caller holds: its id and run never change, so it is not read again.
        The outcome of a call the policy allowed outright is enqueued, not waited for (see
        ``Store.enqueue_event``): it is the allow path, and nothing decides on it. The outcome of a reviewed
        call (``request_id`` given) is committed before this returns: a run taken over after a crash tells
        the model what that call did from it, and ``crossgate runs show`` lists the calls without one.
        """
        if tracing.enabled():
            tracing.outcome_span(request_id, call, ran=ran, failed=error is not None)
        payload: JsonObject = {"ran": bool(ran), "result": clip_text(_text(result)), "error": clip_text(_text(error))}
        if call is not None:
            payload.update(call_payload(call))
        run = call.run if call else None
        if isinstance(request_id, ApprovalRequest):
            run, request_id = request_id.call.run, request_id.id
        elif request_id is not None:
            run = self.get(request_id).call.run
        event = self._event(outcome_kind(ran).value, run=run, payload=payload)
        if request_id is not None:
            event = event.model_copy(update={"request_id": request_id})
        if request_id is None:
            self.store.enqueue_event(event)
        else:
            self.store.append_event(event)

    def outcome(self, request_id: str) -> Event | None:
        """The outcome event (``ran`` or ``not_run``) that followed the request's ``applied`` one: whether the
        tool ran, and what came of it; None before it is applied, or when its outcome was never recorded (a crash)."""
        return outcome_in(self.store.list_events(request_id=request_id))

    def expire_overdue(self) -> list[ApprovalRequest]:
        """Close every pending request past its ``expires_at``; return those this call expired."""
        expired: list[ApprovalRequest] = []
        now = self.now()
        for request in self.store.overdue_requests(now):
            closed = self._close(request, RequestStatus.EXPIRED, EXPIRY_MESSAGE, actor="crossgate")
            if closed is not None:
                expired.append(closed)
        return expired

    def cancel(self, request_id: str, *, reason: str = CANCEL_MESSAGE, actor: str | None = None) -> ApprovalRequest:
        """Close a pending request without a decision; the SDK gets a rejection carrying ``reason``."""
        self.limits.check_text(reason, "the reason", self.limits.message_bytes)
        if not reason.strip():  # the model reads it as the call's rejection, which needs words
            raise InvalidDecisionError("a cancellation needs a reason: it is what the model reads")
        request = self.get(request_id)
        check_open(request, self.now())
        closed = self._close(request, RequestStatus.CANCELLED, reason, actor=actor)
        if closed is None:
            check_open(self.get(request_id), self.now())
            raise ConflictError(f"request {request_id} changed while it was being cancelled")
        return closed

    def _close(
        self,
        request: ApprovalRequest,
        status: RequestStatus,
        reason: str,
        *,
        actor: str | None,
        was: RequestStatus = RequestStatus.PENDING,
    ) -> ApprovalRequest | None:
        closed = request.model_copy(update={"status": status, "closed_reason": reason})
        event = self._event(status.value, request, actor=actor, payload={"reason": reason})
        if self.store.update_request(closed, (was,), event) is None:
            return None
        self._waits.notify(request.id)
        return closed

    # waiting ------------------------------------------------------------------------------------
    async def wait(self, request_id: str, timeout: float | None = None) -> ApprovalRequest:
        """Wait until the request leaves ``pending`` or ``timeout`` seconds pass; return it either way.

        A request that reaches its expiry while waited on is expired here, so the caller gets its
        rejection at once.
        """
        request = self.get(request_id)
        if not request.is_open:
            return request
        with tracing.span("crossgate.wait", request=request) as span:
            waiter = self._waits.register(request_id, asyncio.get_running_loop())
            try:
                request = self.get(request_id)
                if request.is_open:
                    await waiter.wait_async(self._wait_budget(request, timeout))
            finally:
                self._waits.unregister(request_id, waiter)
            return self._after_wait(request_id, span)

    def wait_blocking(self, request_id: str, timeout: float | None = None) -> ApprovalRequest:
        """The blocking form of :meth:`wait`, for threads without an event loop."""
        request = self.get(request_id)
        if not request.is_open:
            return request
        with tracing.span("crossgate.wait", request=request) as span:
            waiter = self._waits.register(request_id, None)
            try:
                request = self.get(request_id)
                if request.is_open:
                    waiter.wait_blocking(self._wait_budget(request, timeout))
            finally:
                self._waits.unregister(request_id, waiter)
            return self._after_wait(request_id, span)

    def _wait_budget(self, request: ApprovalRequest, timeout: float | None) -> float | None:
        if request.expires_at is None:
            return timeout
        until_expiry = max(0.0, (request.expires_at - self.now()).total_seconds())
        return until_expiry if timeout is None else min(timeout, until_expiry)

    def _after_wait(self, request_id: str, span: object) -> ApprovalRequest:
        """The request as the wait left it (expired here if it reached its expiry), told to the wait's span."""
        request = self.get(request_id)
        if request.is_open and request.expires_at is not None and request.expires_at <= self.now():
            self._close(request, RequestStatus.EXPIRED, EXPIRY_MESSAGE, actor="crossgate")
            request = self.get(request_id)
        if span is not None:
            tracing.set_attributes(span, tracing.waited_attributes(request))
        return request

    @property
    def waiting(self) -> int:
        """How many callers are waiting in this process."""
        return self._waits.waiting

    # audit --------------------------------------------------------------------------------------
    def events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        """The audit log in order."""
        return self.store.list_events(after=after, limit=limit, request_id=request_id)

    def verify_audit(self) -> AuditReport:
        """Check the hash chain of the whole log against the recorded head."""
        return verify_log(self.store)


def _text(value: object) -> str | None:
    """``value`` as text for an audit payload (an adapter may hand over a non-text result)."""
    return value if value is None or isinstance(value, str) else str(value)


def _verdict_of(request: ApprovalRequest) -> Verdict:
    return Verdict(
        kind=VerdictKind.ASK,
        reason=request.reason,
        rule=request.rule,
        allowed_decisions=request.allowed_decisions,
        description=request.description,
    )

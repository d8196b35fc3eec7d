"""``ReviewQueue``: the one place where requests are created, decided, applied and audited.

It enforces DESIGN.md's invariants 1 (fail closed), 2 (bound to arguments), 3 (exactly once) and
7 (everything recorded). Adapters, the server and the CLI only call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from crossgate.audit import AuditReport, verify_chain
from crossgate.clock import Clock, new_id, utc_now
from crossgate.decisions import AnyDecision, check_decision, check_open, check_schema, decision_summary
from crossgate.errors import (
    AdapterError,
    AlreadyAppliedError,
    ConflictError,
    DecisionNotAllowedError,
    FingerprintMismatchError,
    NotFoundError,
    ParkedRunClaimedError,
    RequestCancelledError,
    RequestExpiredError,
)
from crossgate.fingerprint import fingerprint
from crossgate.model import (
    ALL_DECISIONS,
    CANCEL_MESSAGE,
    EXPIRY_MESSAGE,
    ApprovalRequest,
    DecisionKind,
    Edit,
    Event,
    JsonObject,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    Reject,
    RememberMatch,
    RememberScope,
    RequestStatus,
    StandingRule,
    ToolCall,
    Verdict,
    VerdictKind,
)
from crossgate.policy.rules import Policy
from crossgate.stores.base import Page, RequestQuery, Store, claimable
from crossgate.waiting import WaitRegistry

REQUIRED_DECISIONS = (DecisionKind.APPROVE, DecisionKind.REJECT)
"""Every adapter can express these; a request always allows at least them."""
OUTCOME_TEXT_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Submission:
    """What ``submit`` returns: the verdict, and the pending request when the verdict is ask."""

    verdict: Verdict
    request: ApprovalRequest | None = None
    stored: bool = True
    """False for a request :meth:`ReviewQueue.prepare` built and nobody stored yet."""


class ReviewQueue:
    """Submit calls, decide requests exactly once, wait for decisions, and keep the audit chain."""

    def __init__(self, store: Store, policy: Policy | None = None, *, clock: Clock = utc_now) -> None:
        self.store = store
        self.policy = policy or Policy()
        self._clock = clock
        self._waits = WaitRegistry(store)
        # The active standing rules as of an audit head: every rule change appends its event in the
        # same transaction, so an unchanged head (from any process) means unchanged rules.
        self._rules_cache: tuple[tuple[int, str], list[StandingRule]] | None = None

    def close(self) -> None:
        """Stop the wake-up watcher and close the store."""
        self._waits.close()
        self.store.close()

    def now(self) -> datetime:
        """The queue's clock."""
        return self._clock()

    # policy -------------------------------------------------------------------------------------
    def evaluate(self, call: ToolCall) -> Verdict:
        """The policy's verdict for ``call`` with the current standing rules; records nothing."""
        return self.policy.evaluate(call, self._active_rules(), now=self.now())

    def _active_rules(self) -> list[StandingRule]:
        # The head is read before the rules: a rule added in between is cached under the older head,
        # which no longer matches on the next call, so a stale list is never kept.
        head = self.store.audit_head()
        cached = self._rules_cache
        if cached is not None and cached[0] == head:
            return cached[1]
        rules = self.store.list_rules()
        self._rules_cache = (head, rules)
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
    ) -> Submission:
        """Evaluate ``call``; record allow and deny, or create a pending request for ask.

        ``capabilities`` are the decisions the adapter can express for this call; the request allows
        those the policy rule allows too. ``request_id`` makes submission idempotent: an adapter that
        asks again for the same call (a re-run node, a re-asked permission) gets the same request back,
        and a different call under the same id is refused. ``timeout_seconds`` is the adapter's own limit
        on how long the request may stay pending (a call it holds inline and cannot resume later): the
        request expires at the earlier of it and the policy rule's timeout.
        """
        submission = self.prepare(
            call,
            args_schema=args_schema,
            description=description,
            requested_by=requested_by,
            capabilities=capabilities,
            request_id=request_id,
            timeout_seconds=timeout_seconds,
        )
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
    ) -> Submission:
        """:meth:`submit` without storing a new request: ``park(new_requests=...)`` stores it with the run.

        Allow and deny are recorded as ``submit`` records them; a request that exists under
        ``request_id`` comes back as it is stored. A new request comes back with ``stored=False``.
        """
        check_schema(args_schema)
        if request_id is not None and (existing := self.store.get_request(request_id)) is not None:
            if existing.fingerprint != call.fingerprint:
                raise FingerprintMismatchError(
                    f"request {request_id} exists for other arguments of {existing.call.tool}; refusing to reuse it"
                )
            return Submission(_verdict_of(existing), existing)
        verdict = self.evaluate(call)
        now = self.now()
        if verdict.kind is not VerdictKind.ASK:
            kind = "auto_allowed" if verdict.kind is VerdictKind.ALLOW else "auto_denied"
            payload = {**_call_payload(call), "reason": verdict.reason, "rule": verdict.rule}
            self.store.append_event(self._event(kind, run=call.run, actor="policy", channel="policy", payload=payload))
            return Submission(verdict)
        allowed = tuple(k for k in verdict.allowed_decisions if k in capabilities)
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
        )
        return Submission(verdict, request, stored=False)

    def _submitted_event(self, request: ApprovalRequest) -> NewEvent:
        call = request.call
        payload = {**_call_payload(call), "fingerprint": request.fingerprint, "reason": request.reason}
        return self._event("submitted", request, actor=request.requested_by, channel=call.framework, payload=payload)

    # reading ------------------------------------------------------------------------------------
    def get(self, request_id: str) -> ApprovalRequest:
        """The request with this id; NotFoundError if there is none."""
        request = self.store.get_request(request_id)
        if request is None:
            raise NotFoundError(f"no request with id {request_id!r}")
        return request

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
    def decide(self, request_id: str, decision: AnyDecision, *, reviewer: str, channel: str = "api") -> ApprovalRequest:
        """Record ``decision`` exactly once; refuse anything invalid and change nothing then."""
        request = self.get(request_id)
        now = self.now()
        check_open(request, now)
        check_decision(request, decision, reviewer)
        if isinstance(decision, Edit):
            self._check_edit_policy(request, decision)
        stamped = decision.model_copy(
            update={"fingerprint": request.fingerprint, "reviewer": reviewer, "channel": channel, "decided_at": now}
        )
        decided = request.model_copy(update={"status": RequestStatus.DECIDED, "decision": stamped, "decided_at": now})
        payload = decision_summary(stamped, request.call.args)
        event = self._event("decided", request, actor=reviewer, channel=channel, payload=payload)
        if self.store.update_request(decided, (RequestStatus.PENDING,), event) is None:
            check_open(self.get(request_id), now)
            raise ConflictError(f"request {request_id} changed while it was being decided")
        if stamped.remember is not None and stamped.remember.scope is not RememberScope.ONCE:
            self._remember(decided, stamped, reviewer)
        self._waits.notify(request_id)
        return decided

    def _check_edit_policy(self, request: ApprovalRequest, edit: Edit) -> None:
        # An edit must not route around the policy: the edited call is the one that runs, so a deny
        # (a policy rule or a remembered rejection) for it refuses the edit, as it would the call.
        verdict = self.evaluate(request.call.model_copy(update={"args": edit.args}))
        if verdict.kind is VerdictKind.DENY:
            why = verdict.reason or (f"rule {verdict.rule}" if verdict.rule else "the policy denies it")
            raise DecisionNotAllowedError(
                f"request {request.id}: the policy denies {request.call.tool} with the edited arguments ({why})"
            )

    def mark_applied(
        self, request_id: str | ApprovalRequest, *, args: JsonObject | None = None, actor: str | None = None
    ) -> ApprovalRequest:
        """Record that the decision reached the SDK; exactly once.

        For approve and edit, ``args`` are the arguments about to run; they must be the approved (or
        edited) ones, or FingerprintMismatchError is raised and nothing is recorded. ``request_id`` may
        be the decided request the caller holds (a decision never changes once made): it is not read
        again, and the compare-and-set on the stored row still lets only one caller apply it.
        """
        if isinstance(request_id, ApprovalRequest) and request_id.status is RequestStatus.DECIDED:
            request = request_id
        else:
            request = self.get(request_id.id if isinstance(request_id, ApprovalRequest) else request_id)
        request_id = request.id
        if request.status is RequestStatus.APPLIED:
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
        now = self.now()
        applied = request.model_copy(update={"status": RequestStatus.APPLIED, "applied_at": now})
        event = self._event("applied", request, actor=actor, channel=request.call.framework, payload={})
        if self.store.update_request(applied, (RequestStatus.DECIDED,), event) is None:
            raise AlreadyAppliedError(f"request {request_id} was already applied; nothing runs twice")
        self._waits.notify(request_id)
        return applied

    def record_outcome(
        self,
        request_id: str | ApprovalRequest | None,
        *,
        ran: bool,
        result: str | None = None,
        error: str | None = None,
        call: ToolCall | None = None,
    ) -> Event:
        """Append what happened when the SDK got its answer: whether the tool ran, a result summary, an error.

        ``request_id`` may be the request the caller holds: its id and run never change, so it is not read again.
        """
        payload: JsonObject = {"ran": ran, "result": _clip(result), "error": _clip(error)}
        if call is not None:
            payload.update(_call_payload(call))
        run = call.run if call else None
        if isinstance(request_id, ApprovalRequest):
            run, request_id = request_id.call.run, request_id.id
        elif request_id is not None:
            run = self.get(request_id).call.run
        return self.store.append_event(
            NewEvent(kind="executed", at=self.now(), request_id=request_id, run=run, payload=payload)
        )

    def outcome(self, request_id: str) -> Event | None:
        """The ``executed`` event that followed the request's ``applied`` one (whether the tool ran, and what
        came of it); None before it is applied, or when its outcome was never recorded (a crash)."""
        applied = False
        for event in self.store.list_events(request_id=request_id):
            if event.kind == "applied":
                applied = True
            elif applied and event.kind == "executed":
                return event
        return None

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
        request = self.get(request_id)
        check_open(request, self.now())
        closed = self._close(request, RequestStatus.CANCELLED, reason, actor=actor)
        if closed is None:
            check_open(self.get(request_id), self.now())
            raise ConflictError(f"request {request_id} changed while it was being cancelled")
        return closed

    def _close(
        self, request: ApprovalRequest, status: RequestStatus, reason: str, *, actor: str | None
    ) -> ApprovalRequest | None:
        closed = request.model_copy(update={"status": status, "closed_reason": reason})
        event = self._event(status.value, request, actor=actor, payload={"reason": reason})
        if self.store.update_request(closed, (RequestStatus.PENDING,), event) is None:
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
        waiter = self._waits.register(request_id, asyncio.get_running_loop())
        try:
            request = self.get(request_id)
            if request.is_open:
                await waiter.wait_async(self._wait_budget(request, timeout))
        finally:
            self._waits.unregister(request_id, waiter)
        return self._after_wait(request_id)

    def wait_blocking(self, request_id: str, timeout: float | None = None) -> ApprovalRequest:
        """The blocking form of :meth:`wait`, for threads without an event loop."""
        request = self.get(request_id)
        if not request.is_open:
            return request
        waiter = self._waits.register(request_id, None)
        try:
            request = self.get(request_id)
            if request.is_open:
                waiter.wait_blocking(self._wait_budget(request, timeout))
        finally:
            self._waits.unregister(request_id, waiter)
        return self._after_wait(request_id)

    def _wait_budget(self, request: ApprovalRequest, timeout: float | None) -> float | None:
        if request.expires_at is None:
            return timeout
        until_expiry = max(0.0, (request.expires_at - self.now()).total_seconds())
        return until_expiry if timeout is None else min(timeout, until_expiry)

    def _after_wait(self, request_id: str) -> ApprovalRequest:
        request = self.get(request_id)
        if request.is_open and request.expires_at is not None and request.expires_at <= self.now():
            self._close(request, RequestStatus.EXPIRED, EXPIRY_MESSAGE, actor="crossgate")
            request = self.get(request_id)
        return request

    @property
    def waiting(self) -> int:
        """How many callers are waiting in this process."""
        return self._waits.waiting

    # standing rules -----------------------------------------------------------------------------
    def add_rule(self, rule: StandingRule, *, actor: str | None = None, channel: str = "api") -> StandingRule:
        """Store a standing rule (built by hand, or by ``remember``)."""
        payload = rule.model_dump(mode="json", exclude_none=True)
        self.store.insert_rule(rule, self._event("rule_added", actor=actor, channel=channel, payload=payload))
        return rule

    def new_rule(
        self,
        *,
        effect: VerdictKind | str,
        tool: str,
        match: RememberMatch = RememberMatch.TOOL,
        arg_patterns: Mapping[str, str] | None = None,
        args_fingerprint: str | None = None,
        agent: str | None = None,
        framework: str | None = None,
        scope: RememberScope = RememberScope.FOREVER,
        run: str | None = None,
        session: str | None = None,
        message: str | None = None,
        created_by: str | None = None,
        source_request: str | None = None,
        expires_at: datetime | None = None,
    ) -> StandingRule:
        """Build an unsaved standing rule with a fresh id and the current time (``add_rule`` stores it).

        ``effect`` is allow or deny; pydantic's ValidationError names any field that is not valid.
        """
        return StandingRule(
            id=new_id("rule"),
            created_at=self.now(),
            effect=effect,  # validated (and coerced from text) by the model
            tool=tool,
            match=match,
            arg_patterns=dict(arg_patterns or {}),
            args_fingerprint=args_fingerprint,
            agent=agent,
            framework=framework,
            scope=scope,
            run=run,
            session=session,
            message=message,
            created_by=created_by,
            source_request=source_request,
            expires_at=expires_at,
        )

    def rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        """Standing rules, oldest first."""
        return self.store.list_rules(include_revoked=include_revoked)

    def revoke_rule(self, rule_id: str, *, actor: str | None = None, channel: str = "api") -> StandingRule:
        """Revoke a standing rule; it stops applying at once in every adapter."""
        rule = self.store.get_rule(rule_id)
        if rule is None:
            raise NotFoundError(f"no standing rule with id {rule_id!r}")
        if rule.revoked_at is not None:
            raise ConflictError(f"standing rule {rule_id} was already revoked")
        revoked = rule.model_copy(update={"revoked_at": self.now(), "revoked_by": actor})
        event = self._event("rule_revoked", actor=actor, channel=channel, payload={"rule": rule_id})
        if self.store.revoke_rule(revoked, event) is None:
            raise ConflictError(f"standing rule {rule_id} was already revoked")
        return revoked

    def _remember(self, request: ApprovalRequest, decision: AnyDecision, reviewer: str) -> StandingRule:
        remember = decision.remember
        assert remember is not None
        call = request.call
        effect = VerdictKind.DENY if isinstance(decision, Reject) else VerdictKind.ALLOW
        args = request.approved_args() or call.args
        rule = self.new_rule(
            effect=effect,
            tool=call.tool,
            match=remember.match,
            arg_patterns=remember.arg_patterns,
            args_fingerprint=fingerprint(call.tool, args) if remember.match is RememberMatch.EXACT else None,
            agent=call.agent if remember.this_agent_only else None,
            scope=remember.scope,
            run=call.run if remember.scope is RememberScope.RUN else None,
            session=call.session_key if remember.scope is RememberScope.SESSION else None,
            message=decision.message if isinstance(decision, Reject) else None,
            created_by=reviewer,
            source_request=request.id,
            expires_at=remember.expires_at,
        )
        return self.add_rule(rule, actor=reviewer, channel=decision.channel or "api")

    # parked runs --------------------------------------------------------------------------------
    def park(
        self,
        *,
        framework: str,
        run: str,
        request_ids: Sequence[str],
        state: str,
        metadata: JsonObject | None = None,
        new_requests: Sequence[ApprovalRequest] = (),
    ) -> ParkedRun:
        """Store an SDK's paused state server-side; any process can resume it once.

        ``new_requests`` (from :meth:`prepare`, each one of ``request_ids``) are stored in the same
        transaction as the run, so no reviewer ever sees a request whose run is not parked yet.
        """
        fresh = {r.id: r for r in new_requests}
        unknown = sorted(set(fresh) - set(request_ids))
        if unknown:
            raise AdapterError(f"new requests {unknown} are not among the parked run's request ids")
        for request_id in request_ids:
            if request_id not in fresh:
                self.get(request_id)
        now = self.now()
        parked = ParkedRun(
            id=new_id("park"),
            framework=framework,
            run=run,
            request_ids=tuple(request_ids),
            state=state,
            metadata=metadata or {},
            created_at=now,
            updated_at=now,
        )
        payload: JsonObject = {"parked_run": parked.id, "requests": list(parked.request_ids)}
        event = self._event("run_parked", run=run, channel=framework, payload=payload)
        submitted = [(r, self._submitted_event(r)) for r in new_requests]
        self.store.insert_parked_run(parked, event, submitted)
        return parked

    def get_parked(self, parked_id: str) -> ParkedRun:
        """The parked run with this id; NotFoundError if there is none."""
        parked = self.store.get_parked_run(parked_id)
        if parked is None:
            raise NotFoundError(f"no parked run with id {parked_id!r}")
        return parked

    def parked_runs(
        self,
        *,
        statuses: Sequence[ParkedRunStatus] = (ParkedRunStatus.PARKED,),
        framework: str | None = None,
        run: str | None = None,
    ) -> list[ParkedRun]:
        """Parked runs, oldest first."""
        return self.store.list_parked_runs(statuses=statuses, framework=framework, run=run)

    def is_ready(self, parked: ParkedRun) -> bool:
        """True once no request of the parked run is pending."""
        return all(not self.get(r).is_open for r in parked.request_ids)

    def ready_runs(self, *, framework: str | None = None) -> list[ParkedRun]:
        """Parked runs whose requests are all decided, expired or cancelled.

        Includes runs whose resumer's lease ran out (the worker died mid-resume), so another worker
        takes them over; anything it already applied is refused by ``mark_applied`` and never runs twice.
        """
        self.expire_overdue()
        now = self.now()
        statuses = (ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING)
        candidates = self.parked_runs(statuses=statuses, framework=framework)
        return [p for p in candidates if claimable(p, now) and self.is_ready(p)]

    def claim_parked(self, parked_id: str | ParkedRun, *, owner: str, lease_seconds: float = 300.0) -> ParkedRun:
        """Take a parked run for resuming; ParkedRunClaimedError if resumed already or leased by another.

        ``parked_id`` may be the parked run the caller holds: only its id and run are used (they never
        change), so it is not read again; the claim itself is decided on the stored run.
        """
        current = parked_id if isinstance(parked_id, ParkedRun) else self.get_parked(parked_id)
        parked_id = current.id
        now = self.now()
        event = self._event("run_claimed", run=current.run, actor=owner, payload={"parked_run": parked_id})
        claimed = self.store.claim_parked_run(parked_id, owner, now, now + timedelta(seconds=lease_seconds), event)
        if claimed is None:
            latest = self.get_parked(parked_id)
            raise ParkedRunClaimedError(
                f"parked run {parked_id} is {latest.status.value}"
                + (f" by {latest.lease_owner}" if latest.status is ParkedRunStatus.RESUMING else "")
                + "; a parked state is resumed once"
            )
        return claimed

    def finish_parked(
        self,
        parked_id: str | ParkedRun,
        *,
        owner: str,
        status: ParkedRunStatus = ParkedRunStatus.RESUMED,
        outcome: str | None = None,
    ) -> ParkedRun:
        """Close a resume the caller holds the lease for (``parked_id`` may be the parked run it holds)."""
        current = parked_id if isinstance(parked_id, ParkedRun) else self.get_parked(parked_id)
        parked_id = current.id
        payload: JsonObject = {"parked_run": parked_id, "status": status.value, "outcome": _clip(outcome)}
        event = self._event("run_resumed", run=current.run, actor=owner, payload=payload)
        finished = self.store.finish_parked_run(parked_id, owner, status, outcome, self.now(), event)
        if finished is None:
            self.get_parked(parked_id)  # NotFoundError for a run that does not exist
            raise ParkedRunClaimedError(f"{owner} does not hold the lease on parked run {parked_id}")
        return finished

    def retry_parked(self, parked_id: str, *, actor: str | None = None) -> ParkedRun:
        """Offer a failed parked run for resuming again, from the state it was parked with.

        A worker (or the adapter's ``resume``) takes it as it takes any ready run. Calls its failed attempt
        applied are never run again: their gated tools refuse, and the model is told what happened then.
        NotFoundError for an unknown id; ConflictError unless the run failed.
        """
        current = self.get_parked(parked_id)
        payload: JsonObject = {"parked_run": current.id, "failed_with": _clip(current.outcome)}
        event = self._event("run_retried", run=current.run, actor=actor, payload=payload)
        retried = self.store.retry_parked_run(current.id, self.now(), event)
        if retried is None:
            latest = self.get_parked(parked_id)
            raise ConflictError(f"parked run {parked_id} is {latest.status.value}; only a failed run can be retried")
        return retried

    # audit --------------------------------------------------------------------------------------
    def events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        """The audit log in order."""
        return self.store.list_events(after=after, limit=limit, request_id=request_id)

    def verify_audit(self) -> AuditReport:
        """Check the hash chain of the whole log against the recorded head."""
        return verify_chain(self.store.list_events(), head=self.store.audit_head())

    def _event(
        self,
        kind: str,
        request: ApprovalRequest | None = None,
        *,
        run: str | None = None,
        actor: str | None = None,
        channel: str | None = None,
        payload: JsonObject | None = None,
    ) -> NewEvent:
        return NewEvent(
            kind=kind,
            at=self.now(),
            request_id=request.id if request else None,
            run=request.call.run if request else run,
            actor=actor,
            channel=channel,
            payload=payload or {},
        )


def _call_payload(call: ToolCall) -> JsonObject:
    payload: JsonObject = {
        "framework": call.framework,
        "tool": call.tool,
        "args": call.args,
        "call_id": call.call_id,
        "agent": call.agent,
    }
    if call.context:  # what the SDK said besides (a subagent's instance id, the SDK's own tool name)
        payload["context"] = call.context
    return payload


def _verdict_of(request: ApprovalRequest) -> Verdict:
    return Verdict(
        kind=VerdictKind.ASK,
        reason=request.reason,
        rule=request.rule,
        allowed_decisions=request.allowed_decisions,
        description=request.description,
    )


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= OUTCOME_TEXT_LIMIT:
        return text
    return text[: OUTCOME_TEXT_LIMIT - 1] + "…"

"""The AAP provider's operations over the queue: each AAP request is an ordinary crossgate request.

A call from an instance goes through the queue's policy, standing rules, page and audit with framework
``aap``, the instance id as its agent and run. What AAP cannot carry is mapped as ``wire`` describes;
an edit also leaves a one-shot standing rule (created by ``EDIT_ONCE``) that lets exactly the edited
call of that instance through once, and is revoked by the request that uses it.

An AAP peer sees no state head, so when the server holds the authority's key the provider checks for it
against its signer's memory (``crossgate.state_head``), whatever the store shows now: a call evaluated
under a policy version older than one signed is denied (``rolled_back``), and an approval the signer saw
applied is not consumed again (a store set back to yesterday's copy cannot replay it).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from datetime import datetime, timedelta

from crossgate.errors import AlreadyAppliedError, ConflictError, CrossgateError, RequestExpiredError
from crossgate.fingerprint import fingerprint
from crossgate.model import (
    EDITED_RETRY,
    ApprovalRequest,
    Edit,
    JsonObject,
    RememberMatch,
    RequestStatus,
    ToolCall,
    VerdictKind,
)
from crossgate.queue import ReviewQueue
from crossgate.server.aap.registry import Immediate, Instance, MemoryRegistry, Submitted, digest
from crossgate.server.aap.wire import (
    MAX_TIMEOUT_SECONDS,
    CreateIn,
    OutcomeIn,
    approval_expiry,
    conflict,
    not_found,
    render,
    seconds,
    timestamp,
)
from crossgate.server.agent_api.ownership import owner_of
from crossgate.server.rollback import refuse_rolled_back

FRAMEWORK = "aap"
EDIT_ONCE = EDITED_RETRY
"""``created_by`` of the one-shot standing rule an edit leaves behind."""
EDIT_RETRY_SECONDS = 3600.0
"""How long the edited call stays pre-approved for its one retry."""
CANCELLED_BY_AGENT = "The agent withdrew this request (AAP cancel)."
CANCELLED_BY_DELETE = "The AAP instance that made this request was deleted."
ROLLED_BACK = (
    "crossgate did not allow this call: {problem}. The store was rolled back; do not retry it, tell the user an "
    "operator must look at it."
)
REPLAYED = "The approval on this request was applied already; a store rolled back shows it unused again."


class Provider:
    """Create, read, wait on, cancel and consume AAP requests for authenticated instances."""

    def __init__(
        self,
        queue: ReviewQueue,
        registry: MemoryRegistry,
        *,
        approval_ttl: float,
        allow_private: bool = False,
        webhook_backoff: float = 0.5,
    ) -> None:
        self.queue = queue
        self.registry = registry
        self.ttl = approval_ttl
        self.allow_private = allow_private
        self.webhook_backoff = webhook_backoff

    # create -------------------------------------------------------------------------------------
    def create(self, instance: Instance, key: str, body: JsonObject, submission: CreateIn) -> tuple[JsonObject, bool]:
        """The request for ``body`` under ``key`` and whether it is new; a replay returns it as it is now."""
        timeout = seconds(submission.timeout, "timeout")
        with self.registry.lock:
            existing = self.registry.by_key(instance.id, key)
            if existing is not None:
                if existing.digest != digest(body):
                    raise conflict("idempotency_conflict", "this Idempotency-Key was used for a different request")
                return self.view(existing), False
            record = self._submit(instance, key, body, submission, timeout)
            self.registry.add(record)
        return self.view(record), True

    def _submit(self, instance: Instance, key: str, body: JsonObject, sub: CreateIn, timeout: float) -> Submitted:
        rid = str(uuid.uuid4())
        context: JsonObject = {"aap_instance": instance.name}
        if sub.context is not None:
            context["aap_context"] = sub.context
        if sub.agent_reasoning is not None:
            context["aap_agent_reasoning"] = sub.agent_reasoning
        if sub.server is not None:
            context["aap_server"] = sub.server
        call_id = sub.context.get("call_id") if sub.context else None
        call = ToolCall(
            framework=FRAMEWORK,
            tool=sub.tool,
            args=sub.arguments,
            call_id=call_id if isinstance(call_id, str) else rid,
            run=instance.id,
            agent=instance.id,
            context=context,
        )
        now = self.queue.now()
        window = min(timeout, MAX_TIMEOUT_SECONDS)
        result = self.queue.submit(call, request_id=rid, timeout_seconds=window)
        rolled_back = self.queue.rollback_problem()
        base = Submitted(
            id=rid,
            instance_id=instance.id,
            key=key,
            digest=digest(body),
            body=body,
            created_at=now,
            deadline_at=now + timedelta(seconds=window),
        )
        if rolled_back is not None:
            message = ROLLED_BACK.format(problem=rolled_back)
            refuse_rolled_back(self.queue, call, result, problem=rolled_back, message=message, actor=FRAMEWORK)
            return replace(base, immediate=Immediate(status="denied", decided_at=now, note=message))
        if result.request is not None:
            deadline = result.request.expires_at or base.deadline_at
            return replace(base, created_at=result.request.created_at, deadline_at=deadline)
        verdict = result.verdict
        status, note = ("approved", None) if verdict.kind is VerdictKind.ALLOW else ("denied", verdict.reason)
        if verdict.kind is VerdictKind.ALLOW and verdict.rule is not None and not self._use_edit_once(verdict.rule):
            status, note = "denied", "The pre-approved edited call was already used; request approval again."
        if status == "approved" and verdict.rule is not None:
            note = verdict.reason or None
        return replace(base, immediate=Immediate(status=status, decided_at=now, note=note))

    def _use_edit_once(self, rule_id: str) -> bool:
        """Revoke a one-shot edit rule that just allowed a call; False if another request used it first."""
        rule = next((r for r in self.queue.rules() if r.id == rule_id), None)
        if rule is None or rule.created_by != EDIT_ONCE:
            return True
        try:
            self.queue.revoke_rule(rule_id, actor=EDIT_ONCE, channel=FRAMEWORK)
        except ConflictError:
            return False
        return True

    # read ---------------------------------------------------------------------------------------
    def owned(self, instance: Instance, request_id: str) -> Submitted:
        """The instance's own request, or 404 (another instance's requests do not exist for it)."""
        record = self.registry.get(request_id)
        if record is None or record.instance_id != instance.id:
            raise not_found()
        return record

    def backing(self, record: Submitted) -> ApprovalRequest | None:
        """The crossgate request behind an AAP request (None for an immediate outcome)."""
        if record.immediate is not None:
            return None
        return self.queue.get(record.id)

    def view(self, record: Submitted) -> JsonObject:
        """The AAP object for ``record`` now; an answer that ran nothing is applied as it is first seen."""
        request = self.backing(record)
        if request is not None and request.status is RequestStatus.DECIDED and request.approved_args() is None:
            request = self._apply_denial(request)
        elif request is not None and request.status is RequestStatus.DECIDED and isinstance(request.decision, Edit):
            request = self._apply_edit(request)
        closed_at = self._closed_at(request) if request is not None else None
        return render(record, request, closed_at=closed_at, ttl=self.ttl)

    def _apply_denial(self, request: ApprovalRequest) -> ApprovalRequest:
        try:
            return self.queue.mark_applied(request, actor=request.call.agent)
        except CrossgateError:
            return self.queue.get(request.id)

    def _apply_edit(self, request: ApprovalRequest) -> ApprovalRequest:
        """Deliver an edit as a denial, and pre-approve exactly the edited call of this instance once."""
        assert isinstance(request.decision, Edit)
        args = request.decision.args
        try:
            applied = self.queue.mark_applied(request, args=args, actor=request.call.agent)
        except CrossgateError:
            return self.queue.get(request.id)
        rule = self.queue.new_rule(
            effect=VerdictKind.ALLOW,
            tool=request.call.tool,
            match=RememberMatch.EXACT,
            args_fingerprint=fingerprint(request.call.tool, args),
            agent=request.call.agent,
            framework=FRAMEWORK,
            created_by=EDIT_ONCE,
            source_request=request.id,
            expires_at=self.queue.now() + timedelta(seconds=EDIT_RETRY_SECONDS),
        )
        self.queue.add_rule(rule, actor=request.decision.reviewer, channel=FRAMEWORK)
        return applied

    def _closed_at(self, request: ApprovalRequest) -> datetime | None:
        if request.status not in (RequestStatus.EXPIRED, RequestStatus.CANCELLED):
            return None
        kinds = {RequestStatus.EXPIRED.value, RequestStatus.CANCELLED.value}
        closing = [e.at for e in self.queue.events(request_id=request.id) if e.kind in kinds]
        return closing[-1] if closing else None

    async def wait(self, record: Submitted, timeout: float) -> JsonObject:
        """Hold until the request is terminal or ``timeout`` passes (the queue's wake-up, not a poll loop)."""
        if record.immediate is None:
            await self.queue.wait(record.id, timeout=timeout)
        return self.view(record)

    # cancel -------------------------------------------------------------------------------------
    def cancel(self, record: Submitted, reason: str = CANCELLED_BY_AGENT) -> JsonObject:
        """Withdraw a pending request; a cancelled one comes back as it is, any other terminal one is a 409."""
        current = self.view(record)
        if current["status"] == "cancelled":
            return current
        if current["status"] != "pending":
            raise conflict("already_terminal", f"the request is already {current['status']}")
        with contextlib.suppress(ConflictError):  # decided meanwhile: the view says how
            self.queue.cancel(record.id, reason=reason, actor=record.instance_id)
        return self.view(record)

    # consume and outcome (the AAP Python client's execution step) -------------------------------
    def consume(self, record: Submitted, key: str) -> JsonObject:
        """Mark an approval used, once, just before its call starts."""
        with self.registry.lock:
            record = self.registry.get(record.id) or record
            current = self.view(record)
            if record.consumed_at is not None:
                if record.consume_key == key:
                    return current
                raise conflict("already_consumed", "this approval was already used")
            if current["status"] != "approved":
                raise conflict("not_approved", f"the request is {current['status']}, not approved")
            now = self.queue.now()
            request = self.backing(record)
            if request is not None:
                if now >= approval_expiry(request, request.decided_at or now, self.ttl):
                    raise conflict("approval_expired", "the approval expired before the call started")
                self._refuse_replay(request, record.instance_id)
                try:
                    self.queue.mark_applied(request, args=request.call.args, actor=record.instance_id)
                except AlreadyAppliedError:
                    raise conflict("already_consumed", "this approval was already used") from None
                except (RequestExpiredError, ConflictError) as exc:
                    raise conflict("approval_expired", str(exc)) from None
                self.queue.sign_state_head()  # names the approval applied now, not at the next tick
            elif record.immediate is not None and now >= record.immediate.decided_at + timedelta(seconds=self.ttl):
                raise conflict("approval_expired", "the approval expired before the call started")
            record = replace(record, consumed_at=now, consume_key=key)
            self.registry.save(record)
            return self.view(record)

    def _refuse_replay(self, request: ApprovalRequest, actor: str) -> None:
        """409 ``already_consumed`` when the server's signer saw this approval applied (the store shows it
        decided again: rolled back); the request is closed so that nothing else applies it either."""
        heads = self.queue.head_signer
        if heads is None or not heads.consumed(request.id):
            return
        self.queue.refuse_unverified(
            request, reason="consumed", problem="the approval was applied already", message=REPLAYED, actor=actor
        )
        raise conflict("already_consumed", "this approval was already used")

    def report(self, record: Submitted, outcome: OutcomeIn) -> JsonObject:
        """Record whether the approved call succeeded (once; a repeat of the same report is answered again)."""
        with self.registry.lock:
            record = self.registry.get(record.id) or record
            if record.consumed_at is None:
                raise conflict("not_consumed", "report an outcome after consuming the approval")
            if record.outcome is not None:
                if record.outcome.get("status") == outcome.status and record.outcome.get("note") == outcome.note:
                    return self.view(record)
                raise conflict("outcome_reported", "an outcome was already reported")
            reported: JsonObject = {"status": outcome.status, "reported_at": timestamp(self.queue.now())}
            if outcome.note:
                reported["note"] = outcome.note
            if record.immediate is None:
                ran = outcome.status == "succeeded"
                self.queue.record_outcome(
                    record.id,
                    ran=True,
                    result=outcome.note if ran else None,
                    error=None if ran else (outcome.note or "failed"),
                )
            record = replace(record, outcome=reported)
            self.registry.save(record)
            return self.view(record)

    # instances ----------------------------------------------------------------------------------
    def retire(self, instance: Instance) -> None:
        """Delete an instance: its credential is refused and its pending requests are cancelled.

        Those it made over the native agent API too (owned by the instance id, see ``agent_api.ownership``).
        """
        open_ids = []
        for record in self.registry.delete(instance.id, self.queue.now()):
            request = self.backing(record)
            if request is not None and request.is_open:
                open_ids.append(record.id)
        open_ids += [r.id for r in self.queue.pending() if owner_of(r) == instance.id]
        for request_id in open_ids:
            with contextlib.suppress(ConflictError):
                self.queue.cancel(request_id, reason=CANCELLED_BY_DELETE, actor="aap")

"""The agent API's operations: the queue's adapter interface, for one agent credential at a time.

Every call goes through the same ``ReviewQueue`` (policy, standing rules, page, audit) as any other;
what this adds is who may touch what (a caller sees only what it created: anything else is "not
found"), idempotency keys, and the audit attribution (actor = the credential, channel ``agent-api``).
Client-held state is not trusted: requests handed back to ``park`` are prepared again from their calls
and the policy, and only their calls, schemas, descriptions and people are taken from the client.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import JsonValue

from crossgate._queue_base import recorded_as
from crossgate.adapter._heads import ROLLED_BACK
from crossgate.errors import (
    ConfigurationError,
    ConflictError,
    InvalidArgumentsError,
    NotFoundError,
    ParkedRunClaimedError,
)
from crossgate.model import (
    CANCEL_MESSAGE,
    ApprovalRequest,
    Event,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    ToolCall,
    Verdict,
    VerdictKind,
)
from crossgate.queue import ReviewQueue, Submission
from crossgate.server.agent_api.credentials import AgentCaller
from crossgate.server.agent_api.idempotency import MAX_KEY_LENGTH, Answer, Ledger, body_digest, conflict
from crossgate.server.agent_api.ownership import (
    OWNER_KEY,
    key_digest,
    owns_parked,
    owns_request,
    stamp,
    stamp_of,
    stamped_call,
)
from crossgate.server.agent_api.schemas import (
    ClaimIn,
    FinishIn,
    OutcomeIn,
    ParkIn,
    RefusalIn,
    RequestIn,
    RequestListOut,
    SubmissionOut,
)
from crossgate.server.rollback import refuse_rolled_back
from crossgate.stores.base import RequestQuery

CHANNEL = "agent-api"
"""The channel of every event recorded through the agent API."""
T = TypeVar("T")


class IdempotencyKeyRequiredError(ConfigurationError):
    """A creating POST without an ``Idempotency-Key`` header (HTTP 422 ``idempotency_key_required``)."""


class NoOutcomeError(NotFoundError):
    """The request has no recorded outcome (yet) (HTTP 404 ``no_outcome``)."""


class LeaseHeldError(ParkedRunClaimedError):
    """Another resumer holds the parked run's lease (HTTP 409 ``lease_held``)."""


class AlreadyResumedError(ParkedRunClaimedError):
    """The parked run was resumed (or failed) already; a parked state is resumed once (HTTP 409 ``already_resumed``)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """An operation's answer: status, JSON body (None for 204) and whether it replays an earlier one."""

    status: int
    body: JsonValue = None
    replay: bool = False


def check_key(key: str | None, *, required: bool) -> str | None:
    """The ``Idempotency-Key`` header, checked."""
    if key is None or key == "":
        if required:
            raise IdempotencyKeyRequiredError("this POST needs an Idempotency-Key header (any unique text)")
        return None
    if len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ConfigurationError(f"the Idempotency-Key must be printable text of at most {MAX_KEY_LENGTH} characters")
    return key


def derived_request_id(caller: AgentCaller, key: str) -> str:
    """The id of a request created under ``key`` without an id of its own: the same on every retry."""
    return "req_" + hashlib.sha256(f"{caller.id}\n{key}".encode()).hexdigest()[:32]


def _same_call(a: ToolCall, b: ToolCall) -> bool:
    fields = ("framework", "tool", "call_id", "run", "agent")
    return a.fingerprint == b.fingerprint and all(getattr(a, f) == getattr(b, f) for f in fields)


def _json(model: ApprovalRequest | ParkedRun | Event | Verdict | SubmissionOut | RequestListOut) -> JsonValue:
    return model.model_dump(mode="json")


class AgentApi:
    """The agent API over ``queue``; one per app (``app.state.agent_api``)."""

    def __init__(self, queue: ReviewQueue) -> None:
        self.queue = queue
        self.ledger = Ledger()

    # idempotency --------------------------------------------------------------------------------
    def once(
        self,
        caller: AgentCaller,
        key: str | None,
        route: str,
        body: JsonValue,
        create: Callable[[], tuple[Answer, bool]],
        reread: Callable[[str], JsonValue] | None = None,
    ) -> Reply:
        """Run ``create`` once per key; a replay answers as the first time (200 for a 201), or reads again."""
        if key is None:
            answer, _ = create()
            return Reply(answer.status, answer.body if answer.ref is None or reread is None else reread(answer.ref))
        digest = body_digest(route, body)
        with self.ledger.hold(caller.id, key):
            earlier = self.ledger.answer(caller.id, key, digest)
            if earlier is not None:
                answer, replay = earlier, True
            else:
                answer, replay = create()
                self.ledger.keep(caller.id, key, digest, answer)
        content = answer.body if answer.ref is None or reread is None else reread(answer.ref)
        status = 200 if replay and answer.status == 201 else answer.status
        return Reply(status, content, replay)

    # requests -----------------------------------------------------------------------------------
    def owned(self, caller: AgentCaller, request_id: str) -> ApprovalRequest:
        """The caller's request; NotFoundError for one that does not exist or is someone else's."""
        request = self.queue.store.get_request(request_id)
        if request is None or not owns_request(caller, request):
            raise NotFoundError(f"no request with id {request_id!r}")
        return request

    def evaluate(self, caller: AgentCaller, call: ToolCall) -> Verdict:
        """The policy's verdict for ``call`` as the caller would submit it; records nothing, but a refusal
        when the policy evaluated is older than the newest one signed (a store put back)."""
        stamped = stamped_call(call, caller)
        return self._held_to_floor(caller, stamped, Submission(self.queue.evaluate(stamped))).verdict

    def submit(self, caller: AgentCaller, key: str, body: RequestIn) -> Reply:
        """``submit`` (or ``prepare``) ``body.call`` under ``key``."""

        def create() -> tuple[Answer, bool]:
            call = stamped_call(body.call, caller, key)
            request_id = body.request_id or derived_request_id(caller, key)
            existing = self.queue.store.get_request(request_id)
            if existing is not None:
                if not owns_request(caller, existing):
                    raise NotFoundError(f"no request with id {request_id!r} is yours; choose another id")
                if stamp_of(existing.call.context).get("key") == key_digest(key):  # a retry after a restart
                    if not _same_call(existing.call, call):
                        raise conflict()
                    verdict = Verdict(
                        kind=VerdictKind.ASK,
                        reason=existing.reason,
                        rule=existing.rule,
                        allowed_decisions=existing.allowed_decisions,
                        description=existing.description,
                    )
                    return Answer(201, _json(SubmissionOut(verdict=verdict, request=existing))), True
            with recorded_as(caller.name, CHANNEL):
                submission = (self.queue.submit if body.store else self.queue.prepare)(
                    call,
                    args_schema=body.args_schema,
                    description=body.description,
                    requested_by=body.requested_by,
                    capabilities=body.capabilities,
                    request_id=request_id,
                    timeout_seconds=body.timeout_seconds,
                )
            submission = self._held_to_floor(caller, call, submission)
            out = SubmissionOut(verdict=submission.verdict, request=submission.request, stored=submission.stored)
            return Answer(201, _json(out)), False

        return self.once(caller, key, "POST /requests", body.model_dump(mode="json"), create)

    def _held_to_floor(self, caller: AgentCaller, call: ToolCall, submission: Submission) -> Submission:
        """``submission``, or a deny when the policy just evaluated is older than the newest signed one."""
        problem = self.queue.rollback_problem()
        if problem is None:
            return submission
        message = ROLLED_BACK.format(tool=call.tool, problem=problem)
        with recorded_as(caller.name, CHANNEL):
            return refuse_rolled_back(self.queue, call, submission, problem=problem, message=message, actor=caller.name)

    def list_requests(self, caller: AgentCaller, query: RequestQuery) -> RequestListOut:
        """One page of requests, the caller's only (a page may hold fewer than the limit)."""
        page = self.queue.list_requests(query)
        return RequestListOut(items=[r for r in page.items if owns_request(caller, r)], next_cursor=page.next_cursor)

    async def wait(self, caller: AgentCaller, request_id: str, seconds: float) -> ApprovalRequest:
        """The caller's request once it is no longer pending, or after ``seconds``."""
        self.owned(caller, request_id)
        with recorded_as(caller.name, CHANNEL):
            return await self.queue.wait(request_id, timeout=seconds)

    def cancel(self, caller: AgentCaller, key: str | None, request_id: str, reason: str | None) -> Reply:
        """Withdraw the caller's pending request."""
        self.owned(caller, request_id)

        def create() -> tuple[Answer, bool]:
            with recorded_as(caller.name, CHANNEL):
                closed = self.queue.cancel(request_id, reason=reason or CANCEL_MESSAGE, actor=caller.name)
            return Answer(200, _json(closed)), False

        return self.once(caller, key, f"POST /requests/{request_id}/cancel", {"reason": reason}, create)

    def mark_applied(
        self, caller: AgentCaller, key: str | None, request_id: str, args: dict[str, JsonValue] | None
    ) -> Reply:
        """Record that the caller's decided request reached its SDK (exactly once)."""
        self.owned(caller, request_id)

        def create() -> tuple[Answer, bool]:
            with recorded_as(caller.name, CHANNEL):
                applied = self.queue.mark_applied(request_id, args=args, actor=caller.name)
            return Answer(200, _json(applied)), False

        return self.once(caller, key, f"POST /requests/{request_id}/applied", {"args": args}, create)

    def record_outcome(self, caller: AgentCaller, key: str, body: OutcomeIn) -> Reply:
        """Record what happened when the SDK got its answer (204)."""
        if body.request_id is not None:
            self.owned(caller, body.request_id)
        call = None if body.call is None else stamped_call(body.call, caller)

        def create() -> tuple[Answer, bool]:
            with recorded_as(caller.name, CHANNEL):
                self.queue.record_outcome(
                    body.request_id, ran=body.ran, result=body.result, error=body.error, call=call
                )
            return Answer(204), False

        return self.once(caller, key, "POST /outcomes", body.model_dump(mode="json"), create)

    def refuse(self, caller: AgentCaller, key: str | None, body: RefusalIn) -> Reply:
        """Record the caller's gate's refusal: close its decided request with it, or record it for a call."""
        if (body.request_id is None) == (body.call is None):
            raise ConfigurationError("a refusal names a request_id or a call, not both")
        target: ApprovalRequest | ToolCall
        if body.request_id is not None:
            target = self.owned(caller, body.request_id)
        else:
            assert body.call is not None
            target = stamped_call(body.call, caller)

        def create() -> tuple[Answer, bool]:
            with recorded_as(caller.name, CHANNEL):
                closed = self.queue.refuse_unverified(
                    target, reason=body.reason, problem=body.problem, message=body.message, rule=body.rule,
                    actor=caller.name,
                )  # fmt: skip
            return Answer(200, None if closed is None else _json(closed)), False

        return self.once(caller, key, "POST /refusals", body.model_dump(mode="json"), create)

    def outcome(self, caller: AgentCaller, request_id: str) -> Event:
        """The outcome recorded after the caller's request was applied; NoOutcomeError without one."""
        self.owned(caller, request_id)
        event = self.queue.outcome(request_id)
        if event is None:
            raise NoOutcomeError(f"request {request_id!r} has no recorded outcome")
        return event

    def expire_overdue(self, caller: AgentCaller) -> list[ApprovalRequest]:
        """Expire every overdue request (as the server's sweep does); return the caller's."""
        with recorded_as(caller.name, CHANNEL):
            expired = self.queue.expire_overdue()
        return [r for r in expired if owns_request(caller, r)]

    # parked runs --------------------------------------------------------------------------------
    def owned_parked(self, caller: AgentCaller, parked_id: str) -> ParkedRun:
        """The caller's parked run; NotFoundError for one that does not exist or is someone else's."""
        parked = self.queue.store.get_parked_run(parked_id)
        if parked is None or not owns_parked(caller, parked):
            raise NotFoundError(f"no parked run with id {parked_id!r}")
        return parked

    def park(self, caller: AgentCaller, key: str, body: ParkIn) -> Reply:
        """Store the SDK's paused state, with the requests prepared for it, as one run owned by the caller."""
        raw = body.model_dump(mode="json")
        digest = key_digest(body_digest("POST /parked", raw))

        def create() -> tuple[Answer, bool]:
            earlier = self._parked_under(caller, key, body)
            if earlier is not None:
                if stamp_of(earlier.metadata).get("body") != digest:
                    raise conflict()
                return Answer(201, ref=earlier.id), True
            fresh = self._prepared_again(caller, key, body)
            metadata = {**(body.metadata or {}), OWNER_KEY: stamp(caller, key, body=digest)}
            with recorded_as(caller.name, CHANNEL):
                parked = self.queue.park(
                    framework=body.framework,
                    run=body.run,
                    request_ids=body.request_ids,
                    state=body.state,
                    metadata=metadata,
                    new_requests=fresh,
                )
            return Answer(201, ref=parked.id), False

        return self.once(caller, key, "POST /parked", raw, create, self._parked_json)

    def _parked_json(self, parked_id: str) -> JsonValue:
        return _json(self.queue.get_parked(parked_id))

    def _parked_under(self, caller: AgentCaller, key: str, body: ParkIn) -> ParkedRun | None:
        """The run this caller parked under ``key`` before (found in the store: it survives a restart)."""
        every = tuple(ParkedRunStatus)
        for parked in self.queue.parked_runs(statuses=every, framework=body.framework, run=body.run):
            if owns_parked(caller, parked) and stamp_of(parked.metadata).get("key") == key_digest(key):
                return parked
        return None

    def _prepared_again(self, caller: AgentCaller, key: str, body: ParkIn) -> list[ApprovalRequest]:
        """The new requests as the server prepares them now; the run's other requests must be the caller's."""
        given = {r.id: r for r in body.new_requests}
        unknown = sorted(set(given) - set(body.request_ids))
        if unknown:
            raise InvalidArgumentsError(f"new_requests {unknown} are not among the run's request_ids")
        fresh: list[ApprovalRequest] = []
        for request_id in body.request_ids:
            if request_id not in given:
                self.owned(caller, request_id)
                continue
            prepared = self._prepare_again(caller, key, given.pop(request_id))
            if prepared is not None:
                fresh.append(prepared)
        return fresh

    def _prepare_again(self, caller: AgentCaller, key: str, sent: ApprovalRequest) -> ApprovalRequest | None:
        if sent.status is not RequestStatus.PENDING or sent.decision is not None:
            raise InvalidArgumentsError(f"new request {sent.id} must be a pending request from prepare, undecided")
        timeout = None
        if sent.expires_at is not None:
            timeout = (sent.expires_at - sent.created_at).total_seconds()
            if timeout <= 0:
                raise InvalidArgumentsError(f"new request {sent.id} expires before it was created")
        with recorded_as(caller.name, CHANNEL):
            submission = self.queue.prepare(
                stamped_call(sent.call, caller, key),
                args_schema=sent.args_schema,
                description=sent.description,
                requested_by=sent.requested_by,
                capabilities=sent.allowed_decisions,
                request_id=sent.id,
                timeout_seconds=timeout,
            )
        if submission.request is None:
            raise ConflictError(
                f"the policy no longer asks about request {sent.id}'s call ({submission.verdict.kind.value}); "
                "submit it again"
            )
        if submission.stored:  # stored already (an earlier park of it): it must be the caller's
            self.owned(caller, sent.id)
            return None
        return submission.request

    def parked_runs(
        self, caller: AgentCaller, statuses: Sequence[ParkedRunStatus], framework: str | None, run: str | None
    ) -> list[ParkedRun]:
        """The caller's parked runs, oldest first."""
        runs = self.queue.parked_runs(statuses=statuses, framework=framework, run=run)
        return [p for p in runs if owns_parked(caller, p)]

    def claim(self, caller: AgentCaller, key: str | None, parked_id: str, body: ClaimIn) -> Reply:
        """Take the caller's parked run for resuming under a lease."""
        self.owned_parked(caller, parked_id)

        def create() -> tuple[Answer, bool]:
            try:
                with recorded_as(caller.name, CHANNEL):
                    claimed = self.queue.claim_parked(parked_id, owner=body.owner, lease_seconds=body.lease_seconds)
            except ParkedRunClaimedError as exc:
                latest = self.queue.get_parked(parked_id)
                held = latest.status is ParkedRunStatus.RESUMING
                raise (LeaseHeldError if held else AlreadyResumedError)(str(exc)) from None
            return Answer(200, ref=claimed.id), False

        return self.once(
            caller, key, f"POST /parked/{parked_id}/claim", body.model_dump(mode="json"), create, self._parked_json
        )

    def finish(self, caller: AgentCaller, key: str | None, parked_id: str, body: FinishIn) -> Reply:
        """Close a resume of the caller's parked run that ``body.owner`` holds the lease for."""
        self.owned_parked(caller, parked_id)

        def create() -> tuple[Answer, bool]:
            with recorded_as(caller.name, CHANNEL):
                finished = self.queue.finish_parked(
                    parked_id, owner=body.owner, status=body.status, outcome=body.outcome
                )
            return Answer(200, ref=finished.id), False

        return self.once(
            caller, key, f"POST /parked/{parked_id}/finish", body.model_dump(mode="json"), create, self._parked_json
        )

    def ready(self, caller: AgentCaller, parked_id: str) -> bool:
        """True once no request of the caller's parked run is pending."""
        return self.queue.is_ready(self.owned_parked(caller, parked_id))

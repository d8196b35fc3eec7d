"""The JSON API under ``/api``: requests, decisions, signed links, standing rules, events, audit, health."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Query, Request, Response, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from crossgate.coverage import decision_coverage, still_asking
from crossgate.decisions import AnyDecision, check_open
from crossgate.errors import InvalidDecisionError, NotFoundError
from crossgate.limits import MAX_INT64, check_int64
from crossgate.model import ApprovalRequest, DecisionKind, Event, RequestStatus, StandingRule, trusted
from crossgate.schemas import decision_schema
from crossgate.server.access import Caller, decide_blocked, require_scope
from crossgate.server.bodies import JsonRoute
from crossgate.server.errors import ForbiddenError, error_body
from crossgate.server.schemas import (
    ApproveIn,
    AuditOut,
    BatchDecided,
    BatchErrorOut,
    BatchIn,
    BatchOut,
    BatchRefused,
    DecisionIn,
    EditIn,
    ErrorOut,
    HealthOut,
    LinksOut,
    RejectIn,
    RequestOut,
    RequestPage,
    RespondIn,
    RuleIn,
    RulesOut,
    WhoAmI,
    to_decision,
)
from crossgate.server.state import ServerState, server_state
from crossgate.stores.base import MAX_PAGE_SIZE, RequestQuery, decode_cursor

log = logging.getLogger(__name__)
AnyDecisionIn = ApproveIn | EditIn | RejectIn | RespondIn
CHANNEL_HEADER = "X-Crossgate-Channel"
"""Sent as ``cli`` by the crossgate command line: its bearer-token decisions are recorded with channel ``cli``."""
bearer = HTTPBearer(auto_error=False, description="A reviewer's token.")


async def current_caller(
    request: Request, _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)] = None
) -> Caller:
    """The authenticated reviewer (401 without a valid token)."""
    # Async, as _state: a tokens-file token is a few hashes and comparisons in memory, run on the event loop
    # rather than through a worker thread (FastAPI runs a plain function dependency in one, a hop on every
    # API call). Any other caller may need a store read, which must not block the loop: that one hops.
    auth = server_state(request).auth
    caller = auth.file_caller(request)
    if caller is None:
        caller = auth.caller(request) if not auth.reads_store else await run_in_threadpool(auth.caller, request)
    if caller.channel == "api" and request.headers.get(CHANNEL_HEADER, "").strip().lower() == "cli":
        return Caller(caller.reviewer, "cli")  # the crossgate CLI, working the queue through the API
    return caller


async def _state(request: Request) -> ServerState:
    return server_state(request)


CallerDep = Annotated[Caller, Depends(current_caller)]
StateDep = Annotated[ServerState, Depends(_state)]

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (401, "No reviewer token, or an unknown one."),
        (403, "Outside the reviewer's scope, or the reviewer submitted the request."),
        (404, "No such request or rule."),
        (409, "The request was already decided, applied, expired or cancelled."),
        (422, "An invalid decision, arguments or query."),
    )
}

router = APIRouter(prefix="/api", responses={401: ERRORS[401], 422: ERRORS[422]}, route_class=JsonRoute)


def request_view(request: ApprovalRequest, caller: Caller) -> RequestOut:
    """The request with what ``caller`` may do with it."""
    blocked = decide_blocked(caller.reviewer, request) if request.is_open else f"request is {request.status.value}"
    # Built without validating the request again: its fields come from a validated ApprovalRequest, the
    # three added ones are typed here (a listing builds one per request on every call).
    return trusted(
        RequestOut,
        {
            **request.__dict__,
            "can_decide": blocked is None,
            "decide_blocked": blocked,
            "remember_covers": decision_coverage(request),
        },
    )


@router.get("/health", response_model=HealthOut, tags=["server"], responses={401: {}, 422: {}})
def health(state: StateDep) -> HealthOut:
    """Liveness, the event log's head and how many requests wait."""
    queue = state.queue
    return HealthOut(
        store=type(queue.store).__name__,
        head=queue.store.audit_head()[0],
        pending=len(queue.pending()),
        notifications=state.notifier.stats() if state.notifier else {},
        channels={name: counts for channel in state.channels for name, counts in channel.stats().items()},
    )


@router.get("/me", response_model=WhoAmI, tags=["server"])
def whoami(caller: CallerDep) -> WhoAmI:
    """The calling reviewer, their scope and the channel their decisions are recorded under."""
    return WhoAmI(name=caller.reviewer.name, scope=caller.reviewer.scope_text(), channel=caller.channel)


@router.get("/requests", response_model=RequestPage, tags=["requests"])
def list_requests(
    state: StateDep,
    caller: CallerDep,
    status: Annotated[list[RequestStatus] | None, Query()] = None,
    framework: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    run: str | None = None,
    order: Literal["newest", "oldest"] = "newest",
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
    cursor: str | None = None,
) -> Response:
    """Requests, newest first by default, filtered by status, framework, tool, agent and run; paged by cursor."""
    if cursor is not None:
        check_int64(decode_cursor(cursor), "the cursor's position")
    query = RequestQuery(
        statuses=tuple(status or ()),
        framework=framework,
        tool=tool,
        agent=agent,
        run=run,
        newest_first=order == "newest",
        limit=limit,
        cursor=cursor,
    )
    page = state.queue.list_requests(query)
    return json_body(RequestPage(items=[request_view(r, caller) for r in page.items], next_cursor=page.next_cursor))


@router.get("/requests/{request_id}", response_model=RequestOut, tags=["requests"], responses={404: ERRORS[404]})
def get_request(request_id: str, state: StateDep, caller: CallerDep) -> RequestOut:
    """One request."""
    return request_view(state.queue.get(request_id), caller)


@router.get("/requests/{request_id}/decision-schema", tags=["requests"], responses={404: ERRORS[404]})
def get_decision_schema(request_id: str, state: StateDep, caller: CallerDep) -> dict[str, object]:
    """JSON Schema of the answers this request allows (edit arguments checked against the tool's schema)."""
    return decision_schema(state.queue.get(request_id))


@router.post(
    "/requests/{request_id}/decision",
    response_model=RequestOut,
    tags=["requests"],
    responses={code: ERRORS[code] for code in (403, 404, 409)},
)
def decide(request_id: str, body: Annotated[DecisionIn, Body()], state: StateDep, caller: CallerDep) -> Response:
    """Decide a pending request exactly once: approve, edit, reject or respond, optionally remembered."""
    decided = _decide_one(state, caller, request_id, body)
    view = request_view(decided, caller)
    if body.remember is not None and body.kind in (DecisionKind.APPROVE, DecisionKind.EDIT):
        view = view.model_copy(update={"still_asks": still_asking(state.queue.evaluate(decided.call))})
    return json_body(view)


def json_body(model: BaseModel) -> Response:
    """``model`` as the JSON response, serialized once (the route's ``response_model`` still documents it).

    Returned as a model, FastAPI would dump it, validate the dump against the response model and serialize
    that: three passes over every request of a page, on the two calls reviewers make most.
    """
    return Response(content=model.model_dump_json(), media_type="application/json")


BATCH_PATH = "/api/decisions"
BATCH_REFUSED = "the batch was refused as a whole; nothing in it was decided"
"""Appended to the message of a malformed batch (see ``decide_many``)."""


@router.post("/decisions", response_model=BatchOut, tags=["requests"])
def decide_many(body: Annotated[BatchIn, Body()], state: StateDep, caller: CallerDep) -> BatchOut:
    """Decide several requests, each on its own, with the same checks as the single decision endpoint.

    The answer has one result per item, in the order given: the decided request, or the error (with the
    status the single endpoint would have answered). A refused item neither stops nor undoes the others.
    A malformed body (no items, more than 100, an item without request_id, a decision that does not
    parse) is refused as a whole with 422, and then nothing is decided.
    """
    for index, item in enumerate(body.items):
        _check_parses(index, item.decision)
    return BatchOut(results=[_try_decide(state, caller, item.request_id, item.decision) for item in body.items])


def _check_parses(index: int, body: AnyDecisionIn) -> None:
    try:
        to_decision(body)
    except ValidationError as exc:  # e.g. a rejection message of blanks: before anything is decided
        first = exc.errors()[0]
        where = ".".join(str(p) for p in (f"body.items.{index}.decision", *first["loc"]))
        raise InvalidDecisionError(f"{where}: {first['msg']}; {BATCH_REFUSED}") from exc


def _try_decide(
    state: ServerState, caller: Caller, request_id: str, body: AnyDecisionIn
) -> BatchDecided | BatchRefused:
    try:
        decided = _decide_one(state, caller, request_id, body)
    except Exception as exc:  # one item's refusal (or failure) is its own result; the batch goes on
        return refused(request_id, exc)
    return BatchDecided(request_id=request_id, request=request_view(decided, caller))


def refused(request_id: str, exc: Exception) -> BatchRefused:
    """One item's refusal as a batch result: the single endpoint's error body and the error's class name."""
    error = error_body(exc)
    internal = error["status"] == 500
    if internal:
        log.error("crossgate server error deciding %s in a batch", request_id, exc_info=exc)
    kind = "InternalError" if internal else type(exc).__name__
    return BatchRefused(request_id=request_id, error=BatchErrorOut.model_validate({**error, "type": kind}))


def _decide_one(state: ServerState, caller: Caller, request_id: str, body: AnyDecisionIn) -> ApprovalRequest:
    return decide_checked(state, caller, request_id, to_decision(body))


def decide_checked(
    state: ServerState, caller: Caller, request_id: str, decision: AnyDecision, *, channel: str | None = None
) -> ApprovalRequest:
    """Every check of a decision made over HTTP: the reviewer's scope, remember's reach, then the queue's own."""
    queue = state.queue
    if not caller.reviewer.unrestricted:
        # A reviewer with a scope: the request is read (and parsed) here to check it, then again by the
        # queue. An unrestricted one may decide any request and remember any rule: nothing to check here,
        # and the queue's own read answers a missing request with the same 404.
        request = queue.get(request_id)
        require_scope(caller.reviewer, request)
        if decision.remember is not None:
            _check_remember_scope(caller, request, decision.remember.this_agent_only)
    return queue.decide(request_id, decision, reviewer=caller.reviewer.name, channel=channel or caller.channel)


def _check_remember_scope(caller: Caller, request: ApprovalRequest, this_agent_only: bool) -> None:
    call = request.call
    probe = StandingRule(
        id="probe",
        effect="allow",
        tool=call.tool,
        agent=call.agent if this_agent_only else None,
        created_at=datetime.now(UTC),
    )
    if not caller.reviewer.may_manage_rule(probe):
        raise ForbiddenError(
            f"remembering would create a standing rule beyond {caller.reviewer.name}'s scope "
            f"({caller.reviewer.scope_text()}); decide without remember"
        )


@router.post(
    "/requests/{request_id}/links",
    response_model=LinksOut,
    tags=["requests"],
    responses={code: ERRORS[code] for code in (403, 404, 409)},
)
def make_links(
    request_id: str,
    state: StateDep,
    caller: CallerDep,
    expires_in: Annotated[int, Query(ge=60, le=7 * 24 * 3600)] = 3600,
) -> LinksOut:
    """Signed approve and reject links for this request, issued to the caller (for e-mail or chat)."""
    target = state.queue.get(request_id)
    require_scope(caller.reviewer, target)
    check_open(target, state.queue.now())
    expires = datetime.now(UTC) + timedelta(seconds=expires_in)
    urls = state.sign_links(target, caller.reviewer.name, expires)
    return LinksOut(
        approve=urls.get(DecisionKind.APPROVE),
        reject=urls.get(DecisionKind.REJECT),
        expires_at=expires.replace(microsecond=0),
    )


@router.get("/requests/{request_id}/events", response_model=list[Event], tags=["audit"], responses={404: ERRORS[404]})
def request_events(request_id: str, state: StateDep, caller: CallerDep) -> list[Event]:
    """The audit trail of one request: submitted, decided (with an edit's diff), applied, then ran or not_run.

    Events are as stored, so their hashes check: an outcome logged before the ``ran``/``not_run`` split has
    kind ``executed`` (its ``payload.ran`` says which).
    """
    state.queue.get(request_id)
    return state.queue.events(request_id=request_id)


@router.get("/rules", response_model=RulesOut, tags=["rules"])
def list_rules(state: StateDep, caller: CallerDep, include_revoked: bool = False) -> RulesOut:
    """Standing rules, oldest first."""
    return RulesOut(items=state.queue.rules(include_revoked=include_revoked))


@router.post("/rules", response_model=StandingRule, status_code=201, tags=["rules"], responses={403: ERRORS[403]})
def add_rule(body: RuleIn, state: StateDep, caller: CallerDep) -> StandingRule:
    """Add a standing rule; the policy consults it in every adapter from now on."""
    rule = state.queue.new_rule(**body.rule_fields(), created_by=caller.reviewer.name)
    if not caller.reviewer.may_manage_rule(rule):
        raise ForbiddenError(
            f"this rule reaches beyond {caller.reviewer.name}'s scope ({caller.reviewer.scope_text()}); "
            "name a concrete tool, framework and agent within it"
        )
    return state.queue.add_rule(rule, actor=caller.reviewer.name, channel=caller.channel)


@router.delete(
    "/rules/{rule_id}",
    response_model=StandingRule,
    tags=["rules"],
    responses={code: ERRORS[code] for code in (403, 404, 409)},
)
def revoke_rule(rule_id: str, state: StateDep, caller: CallerDep) -> StandingRule:
    """Revoke a standing rule; it stops applying at once."""
    rule = state.queue.store.get_rule(rule_id)
    if rule is None:
        raise NotFoundError(f"no standing rule with id {rule_id!r}")
    if not caller.reviewer.may_manage_rule(rule):
        raise ForbiddenError(f"standing rule {rule_id} reaches beyond {caller.reviewer.name}'s scope")
    return state.queue.revoke_rule(rule_id, actor=caller.reviewer.name, channel=caller.channel)


@router.get("/events", response_model=list[Event], tags=["audit"])
def list_events(
    state: StateDep,
    caller: CallerDep,
    after: Annotated[int, Query(ge=0, le=MAX_INT64)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    request_id: str | None = None,
) -> list[Event]:
    """The append-only event log from ``after`` on."""
    return state.queue.events(after=after, limit=limit, request_id=request_id)


@router.get("/audit/verify", response_model=AuditOut, tags=["audit"])
def verify_audit(state: StateDep, caller: CallerDep) -> AuditOut:
    """Check the hash chain of the whole event log."""
    report = state.queue.verify_audit()
    return AuditOut(ok=report.ok, checked=report.checked, problem=report.problem, bad_seq=report.bad_seq)

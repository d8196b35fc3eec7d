"""The native agent API under ``/api/agent/v1`` (OpenAPI tag ``agent``): the adapter interface over HTTP.

The contract is docs/agents-over-http.md ("The native agent API"); ``crossgate.remote.RemoteQueue`` and
the TypeScript client speak it. Every route takes an agent credential (``agent_caller``); a reviewer's
token is refused with 403 here, as an agent's is on every reviewer route.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Security
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from crossgate.fingerprint import canonical_json
from crossgate.limits import check_int64
from crossgate.model import ApprovalRequest, Event, ParkedRun, ParkedRunStatus, RequestStatus, Verdict
from crossgate.server.agent_api.credentials import AgentCaller, agent_caller
from crossgate.server.agent_api.schemas import (
    AppliedIn,
    CancelIn,
    ClaimIn,
    EvaluateIn,
    FinishIn,
    OutcomeIn,
    ParkIn,
    PolicyOut,
    ReadyOut,
    RefusalIn,
    RequestIn,
    RequestListOut,
    StateHeadOut,
    SubmissionOut,
)
from crossgate.server.agent_api.service import AgentApi, Reply, check_key
from crossgate.server.bodies import JsonRoute
from crossgate.server.schemas import ErrorOut
from crossgate.server.state import server_state
from crossgate.stores.base import MAX_PAGE_SIZE, RequestQuery, decode_cursor

AGENT_API_PATH = "/api/agent/v1"
MAX_WAIT_SECONDS = 30.0
"""The longest one long poll holds; a client that waits longer polls again."""
REPLAY_HEADER = "Idempotent-Replay"
agent_bearer = HTTPBearer(
    scheme_name="agentCredential",
    auto_error=False,
    description="An agent credential: a tokens-file [[agents]] token of scope agent, or an AAP instance's.",
)

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (401, "No agent credential, or an unknown, revoked or deleted one."),
        (403, "A reviewer's or provisioner's token: not an agent credential."),
        (404, "No such request or parked run, or it is another agent's."),
        (409, "The state moved on (decided, applied, leased, resumed), or an Idempotency-Key reused for other input."),
        (422, "A body, query or header the API does not accept."),
    )
}


def agent_api(request: Request) -> AgentApi:
    """The agent API of the app serving ``request``."""
    api: AgentApi = request.app.state.agent_api
    return api


def current_agent(
    request: Request, _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(agent_bearer)] = None
) -> AgentCaller:
    """The calling agent credential (401 without one, 403 for a reviewer's token)."""
    state = server_state(request)
    return agent_caller(request, state.auth, request.app.state.agent_registry)


AgentDep = Annotated[AgentCaller, Depends(current_agent)]
ApiDep = Annotated[AgentApi, Depends(agent_api)]
KeyHeader = Annotated[str | None, Header(alias="Idempotency-Key", description="Same key + same body: a replay.")]

router = APIRouter(
    prefix=AGENT_API_PATH,
    tags=["agent"],
    responses={code: _ERRORS[code] for code in (401, 403, 422)},
    route_class=JsonRoute,
)


def _reply(reply: Reply) -> Response:
    headers = {REPLAY_HEADER: "true"} if reply.replay else None
    if reply.status == 204:
        return Response(status_code=204, headers=headers)
    return JSONResponse(reply.body, status_code=reply.status, headers=headers)


def _keyed(*codes: int) -> dict[int | str, dict[str, object]]:
    return {code: _ERRORS[code] for code in codes}


@router.get("/policy", response_model=PolicyOut, responses={304: {"description": "Unchanged (If-None-Match)."}})
def get_policy(
    api: ApiDep, caller: AgentDep, if_none_match: Annotated[str | None, Header(alias="If-None-Match")] = None
) -> Response:
    """The policy calls are judged by; cache it by ``version`` (its ETag)."""
    document = api.queue.policy.model_dump(mode="json")
    version = hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()[:32]
    etag = f'"{version}"'
    if if_none_match is not None and etag in {t.strip() for t in if_none_match.split(",")}:
        return Response(status_code=304, headers={"ETag": etag})
    local, policy_version, _digest = api.queue.evaluated_policy()  # of the policy just read
    body = PolicyOut(
        version=version,
        document=document,
        rules_version=api.queue.store.rules_version(),
        policy_version=policy_version,
        local=local,
    )
    return JSONResponse(body.model_dump(mode="json"), headers={"ETag": etag})


KID = Query(
    pattern=r"^[A-Za-z0-9_-]{1,128}$",
    description="The signing key (kid) whose head to return; default: the server's own key.",
)


@router.get("/state-head", response_model=StateHeadOut)
def get_state_head(api: ApiDep, caller: AgentDep, kid: Annotated[str | None, KID] = None) -> StateHeadOut:
    """The newest signed state head the store holds for key ``kid`` (``token`` null when none): see
    docs/security.md. Ask once per pinned key; the gate verifies each with its own pinned keys."""
    if kid is None:
        authority = api.queue.authority
        if authority is None:
            return StateHeadOut(token=None)
        kid = authority.kid
    return StateHeadOut(token=api.queue.store.get_state_head(kid))


@router.post("/evaluate", response_model=Verdict)
def evaluate(body: EvaluateIn, api: ApiDep, caller: AgentDep) -> Verdict:
    """The policy's verdict for a call, with the current standing rules; records nothing."""
    return api.evaluate(caller, body.call)


@router.post("/requests", response_model=SubmissionOut, status_code=201, responses=_keyed(404, 409))
def submit(body: RequestIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None) -> Response:
    """Submit a call (``store`` true) or prepare its request for ``POST /parked`` (``store`` false)."""
    key = check_key(idempotency_key, required=True)
    assert key is not None
    return _reply(api.submit(caller, key, body))


@router.get("/requests", response_model=RequestListOut)
def list_requests(
    api: ApiDep,
    caller: AgentDep,
    status: Annotated[list[RequestStatus] | None, Query()] = None,
    framework: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    run: str | None = None,
    order: Literal["newest", "oldest"] = "newest",
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
    cursor: str | None = None,
) -> RequestListOut:
    """The caller's own requests, newest first by default; paged by cursor."""
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
    return api.list_requests(caller, query)


@router.get("/requests/{request_id}", response_model=ApprovalRequest, responses=_keyed(404))
async def get_request(
    request_id: str,
    api: ApiDep,
    caller: AgentDep,
    wait: Annotated[float | None, Query(ge=0, allow_inf_nan=False, description="Long poll, seconds (≤ 30).")] = None,
) -> ApprovalRequest:
    """One of the caller's requests; with ``wait``, once it is no longer pending or the wait ends."""
    if wait:
        return await api.wait(caller, request_id, min(wait, MAX_WAIT_SECONDS))
    return await run_in_threadpool(api.owned, caller, request_id)


@router.post("/requests/{request_id}/cancel", response_model=ApprovalRequest, responses=_keyed(404, 409))
def cancel(
    request_id: str, api: ApiDep, caller: AgentDep, body: CancelIn | None = None, idempotency_key: KeyHeader = None
) -> Response:
    """Withdraw a pending request; the SDK gets a rejection carrying the reason."""
    key = check_key(idempotency_key, required=False)
    return _reply(api.cancel(caller, key, request_id, body.reason if body else None))


@router.post("/requests/{request_id}/applied", response_model=ApprovalRequest, responses=_keyed(404, 409))
def mark_applied(
    request_id: str, api: ApiDep, caller: AgentDep, body: AppliedIn | None = None, idempotency_key: KeyHeader = None
) -> Response:
    """Record that the decision reached the SDK, exactly once; ``args`` are the arguments about to run."""
    key = check_key(idempotency_key, required=False)
    return _reply(api.mark_applied(caller, key, request_id, body.args if body else None))


@router.post("/outcomes", status_code=204, responses=_keyed(404, 409))
def record_outcome(body: OutcomeIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None) -> Response:
    """Record whether the tool ran, and a result or error summary."""
    key = check_key(idempotency_key, required=True)
    assert key is not None
    return _reply(api.record_outcome(caller, key, body))


@router.post("/refusals", response_model=ApprovalRequest | None, responses=_keyed(404, 422))
def refuse(body: RefusalIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None) -> Response:
    """Record that the agent's gate refused what let a call run: a decision or standing rule whose signature
    did not verify with the key the agent pins. A decided request is closed (cancelled) with the refusal;
    the answer is the closed request, or null for a call a standing rule allowed."""
    key = check_key(idempotency_key, required=False)
    return _reply(api.refuse(caller, key, body))


@router.get("/requests/{request_id}/outcome", response_model=Event, responses=_keyed(404))
def outcome(request_id: str, api: ApiDep, caller: AgentDep) -> Event:
    """The outcome event (``ran`` or ``not_run``) after the request's ``applied`` one; 404 ``no_outcome`` if none."""
    return api.outcome(caller, request_id)


@router.post("/expire", response_model=list[ApprovalRequest])
def expire_overdue(api: ApiDep, caller: AgentDep) -> list[ApprovalRequest]:
    """Expire overdue requests now; returns the caller's that this call expired."""
    return api.expire_overdue(caller)


@router.post("/parked", response_model=ParkedRun, status_code=201, responses=_keyed(404, 409))
def park(body: ParkIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None) -> Response:
    """Park an SDK's state server-side with its requests; only the parking credential reads the state back."""
    key = check_key(idempotency_key, required=True)
    assert key is not None
    return _reply(api.park(caller, key, body))


@router.get("/parked", response_model=list[ParkedRun])
def parked_runs(
    api: ApiDep,
    caller: AgentDep,
    status: Annotated[list[ParkedRunStatus] | None, Query()] = None,
    framework: str | None = None,
    run: str | None = None,
) -> list[ParkedRun]:
    """The caller's parked runs (status ``parked`` unless named), oldest first."""
    return api.parked_runs(caller, tuple(status or (ParkedRunStatus.PARKED,)), framework, run)


@router.get("/parked/{parked_id}", response_model=ParkedRun, responses=_keyed(404))
def get_parked(parked_id: str, api: ApiDep, caller: AgentDep) -> ParkedRun:
    """One of the caller's parked runs, with its SDK state."""
    return api.owned_parked(caller, parked_id)


@router.get("/parked/{parked_id}/ready", response_model=ReadyOut, responses=_keyed(404))
def is_ready(parked_id: str, api: ApiDep, caller: AgentDep) -> ReadyOut:
    """Whether no request of the run is pending any more."""
    return ReadyOut(ready=api.ready(caller, parked_id))


@router.post("/parked/{parked_id}/claim", response_model=ParkedRun, responses=_keyed(404, 409))
def claim(parked_id: str, body: ClaimIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None) -> Response:
    """Take the run for resuming under a lease; 409 ``lease_held`` or ``already_resumed``."""
    key = check_key(idempotency_key, required=False)
    return _reply(api.claim(caller, key, parked_id, body))


@router.post("/parked/{parked_id}/finish", response_model=ParkedRun, responses=_keyed(404, 409))
def finish(
    parked_id: str, body: FinishIn, api: ApiDep, caller: AgentDep, idempotency_key: KeyHeader = None
) -> Response:
    """Close a resume the named owner holds the lease for."""
    key = check_key(idempotency_key, required=False)
    return _reply(api.finish(caller, key, parked_id, body))

"""The review API's cancellation and parked runs: what ``crossgate cancel`` and ``crossgate runs`` use.

Parked runs are visible to every reviewer, as on the page's runs view; retrying one and cancelling a
request take a reviewer whose scope holds every request concerned. The SDK state never leaves the server.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from crossgate.model import CANCEL_MESSAGE, ParkedRunStatus
from crossgate.server.access import require_scope
from crossgate.server.api import ERRORS, CallerDep, StateDep, request_view
from crossgate.server.bodies import JsonRoute
from crossgate.server.schemas import CancelRequestIn, ParkedRunDetail, ParkedRunOut, ParkedRunsOut, RequestOut

router = APIRouter(
    prefix="/api",
    responses={401: ERRORS[401], 422: ERRORS[422]},
    route_class=JsonRoute,
)


@router.post(
    "/requests/{request_id}/cancel",
    response_model=RequestOut,
    tags=["requests"],
    responses={code: ERRORS[code] for code in (403, 404, 409)},
)
def cancel_request(
    request_id: str, state: StateDep, caller: CallerDep, body: Annotated[CancelRequestIn | None, Body()] = None
) -> RequestOut:
    """Close a pending request without a decision; the agent's SDK gets a rejection carrying the reason."""
    queue = state.queue
    require_scope(caller.reviewer, queue.get(request_id))
    reason = body.reason if body is not None and body.reason is not None else CANCEL_MESSAGE
    return request_view(queue.cancel(request_id, reason=reason, actor=caller.reviewer.name), caller)


@router.get("/runs", response_model=ParkedRunsOut, tags=["runs"])
def list_runs(
    state: StateDep,
    caller: CallerDep,
    status: Annotated[list[ParkedRunStatus] | None, Query()] = None,
    framework: str | None = None,
) -> ParkedRunsOut:
    """Parked runs, oldest first, filtered by status (repeatable; default every status) and framework."""
    runs = state.queue.parked_runs(statuses=tuple(status or ParkedRunStatus), framework=framework)
    return ParkedRunsOut(items=[ParkedRunOut.of(p) for p in runs])


@router.get("/runs/{parked_id}", response_model=ParkedRunDetail, tags=["runs"], responses={404: ERRORS[404]})
def show_run(parked_id: str, state: StateDep, caller: CallerDep) -> ParkedRunDetail:
    """One parked run, its requests, and those applied whose outcome was never recorded."""
    queue = state.queue
    parked = queue.get_parked(parked_id)
    return ParkedRunDetail(
        parked_run=ParkedRunOut.of(parked),
        requests=[request_view(queue.get(r), caller) for r in parked.request_ids],
        applied_without_outcome=[r.id for r in queue.applied_without_outcome(parked)],
    )


@router.post(
    "/runs/{parked_id}/retry",
    response_model=ParkedRunOut,
    tags=["runs"],
    responses={code: ERRORS[code] for code in (403, 404, 409)},
)
def retry_run(parked_id: str, state: StateDep, caller: CallerDep) -> ParkedRunOut:
    """Offer a failed run for resuming again; calls its failed attempt applied never run twice."""
    queue = state.queue
    for request_id in queue.get_parked(parked_id).request_ids:
        require_scope(caller.reviewer, queue.get(request_id))
    return ParkedRunOut.of(queue.retry_parked(parked_id, actor=caller.reviewer.name))

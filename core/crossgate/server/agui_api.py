"""``/api/ag-ui``: the queue as AG-UI interrupts, and AG-UI resume entries as decisions.

An AG-UI client (a chat front end that renders interrupts) can be a crossgate reviewer: it reads a
thread's pending requests as ``RUN_FINISHED``'s interrupt outcome and answers them with the next run's
``resume`` array. The thread is the request's run (an OpenAI run id, a Claude session, a LangGraph
thread). Each entry goes through the same checks as any decision over HTTP; see :mod:`crossgate.agui`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, Field

from crossgate.agui import decision_of, interrupt_outcome, payload_of
from crossgate.errors import AlreadyAppliedError, AlreadyDecidedError, ConflictError, InvalidDecisionError
from crossgate.model import ApprovalRequest, Approve, RequestStatus
from crossgate.server.access import Caller, require_scope
from crossgate.server.api import CallerDep, StateDep, decide_checked, refused, request_view
from crossgate.server.bodies import JsonRoute
from crossgate.server.schemas import BATCH_LIMIT, BatchDecided, BatchOut, BatchRefused
from crossgate.server.state import ServerState
from crossgate.stores.base import MAX_PAGE_SIZE, RequestQuery

router = APIRouter(prefix="/api/ag-ui", tags=["ag-ui"], route_class=JsonRoute)
CHANNEL = "ag-ui"
"""The channel decisions made through AG-UI resume entries record."""
_ANSWER_KEYS = ("approved", "editedArgs", "message", "response")


class ResumeEntryIn(BaseModel):
    """One AG-UI resume entry: the answer to one interrupt (a crossgate request)."""

    interruptId: str = Field(min_length=1)
    status: Literal["resolved", "cancelled"]
    payload: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class ResumeIn(BaseModel):
    """The part of AG-UI's ``RunAgentInput`` that answers interrupts."""

    threadId: str = Field(min_length=1)
    resume: list[ResumeEntryIn] = Field(min_length=1, max_length=BATCH_LIMIT)


@router.get("/interrupts")
def interrupts(state: StateDep, caller: CallerDep, thread: Annotated[str, Query(min_length=1)]) -> dict[str, Any]:
    """What the thread waits for: ``{"type": "interrupt", "interrupts": [...]}``, or ``{"type": "success"}``."""
    pending = _pending(state, thread)
    return interrupt_outcome(pending) if pending else {"type": "success"}


@router.post("/resume", response_model=BatchOut)
def resume(body: Annotated[ResumeIn, Body()], state: StateDep, caller: CallerDep) -> BatchOut:
    """Answer a thread's interrupts: one result per entry, in order, each decided on its own.

    As AG-UI requires, the entries must address every open interrupt of the thread (else 422 and nothing
    is decided). A replayed entry (the same answer to a request already decided that way) is answered
    as decided again and changes nothing; a different answer to it is a conflict.
    """
    open_ids = {r.id for r in _pending(state, body.threadId)}
    missing = sorted(open_ids - {e.interruptId for e in body.resume})
    if missing:
        raise InvalidDecisionError(
            f"resume must address every open interrupt of thread {body.threadId}; missing {', '.join(missing)}; "
            "nothing was decided"
        )
    return BatchOut(results=[_answer(state, caller, body.threadId, entry) for entry in body.resume])


def _answer(state: ServerState, caller: Caller, thread: str, entry: ResumeEntryIn) -> BatchDecided | BatchRefused:
    try:
        request = state.queue.get(entry.interruptId)
        if request.call.run != thread:
            raise InvalidDecisionError(f"interrupt {request.id} belongs to another thread than {thread}")
        decided = _apply(state, caller, request, entry)
    except Exception as exc:  # one entry's refusal is its own result; the others go on
        return refused(entry.interruptId, exc)
    return BatchDecided(request_id=request.id, request=request_view(decided, caller))


def _apply(state: ServerState, caller: Caller, request: ApprovalRequest, entry: ResumeEntryIn) -> ApprovalRequest:
    decision = decision_of(request, entry.model_dump(exclude_none=True))
    if decision is None:  # cancelled: the person abandoned it, so the call does not run
        if request.status is RequestStatus.CANCELLED:
            return request
        require_scope(caller.reviewer, request)
        return state.queue.cancel(request.id, reason=CANCELLED_REASON, actor=caller.reviewer.name)
    try:
        return decide_checked(state, caller, request.id, decision, channel=CHANNEL)
    except (AlreadyDecidedError, AlreadyAppliedError):
        latest = state.queue.get(request.id)
        if latest.decision is not None and _answer_of(payload_of(latest.decision)) == _answer_of(entry.payload or {}):
            return latest  # AG-UI: replaying the same resume is safe, and changes nothing
        raise  # decided otherwise: the conflict as the queue states it
    except ConflictError:
        latest = state.queue.get(request.id)
        replayed_approval = isinstance(decision, Approve) and caller.reviewer.name in state.queue.approvers(latest.id)
        if latest.is_open and replayed_approval:
            return latest  # this reviewer's approval of a request that needs several is counted already
        raise


CANCELLED_REASON = "The reviewer dismissed this tool call without deciding it, so it was not run. Do not retry it."


def _answer_of(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload[k] for k in _ANSWER_KEYS if k in payload}


def _pending(state: ServerState, thread: str) -> list[ApprovalRequest]:
    query = RequestQuery(statuses=(RequestStatus.PENDING,), run=thread, newest_first=False, limit=MAX_PAGE_SIZE)
    return state.queue.list_requests(query).items

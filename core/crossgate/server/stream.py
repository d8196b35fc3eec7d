"""``GET /api/stream``: server-sent events, one per entry of the event log, so nobody needs to poll.

Each SSE message has the event's ``seq`` as its id, so a client that reconnects with
``Last-Event-ID`` (browsers do this by themselves) misses nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from crossgate.limits import MAX_INT64
from crossgate.model import Event, EventKind, event_kind
from crossgate.server.api import CallerDep, StateDep
from crossgate.server.state import ServerState

router = APIRouter(prefix="/api", tags=["stream"])
BATCH = 200


def event_summary(event: Event) -> dict[str, object]:
    """What the stream sends for one event: enough to decide whether to refetch, never tool results.

    ``kind`` is in the current vocabulary (an old ``executed`` outcome is sent as ``ran`` or ``not_run``);
    ``decision`` is the decision kind of a ``decided`` or ``applied`` event.
    """
    payload = event.payload
    return {
        "seq": event.seq,
        "kind": event_kind(event),
        "at": event.at.isoformat(),
        "request_id": event.request_id,
        "run": event.run,
        "actor": event.actor,
        "channel": event.channel,
        "framework": payload.get("framework"),
        "tool": payload.get("tool"),
        "decision": payload.get("kind") if event.kind in (EventKind.DECIDED, EventKind.APPLIED) else None,
    }


def _read(state: ServerState, after: int) -> list[Event]:
    return state.queue.events(after=after, limit=BATCH)


async def _events(state: ServerState, request: Request, after: int) -> AsyncIterator[ServerSentEvent]:
    last = after
    ping = state.settings.stream_ping_seconds
    while not await request.is_disconnected():
        events = await anyio.to_thread.run_sync(_read, state, last)
        for event in events:
            yield ServerSentEvent(data=json.dumps(event_summary(event)), id=str(event.seq))
            last = event.seq
        if len(events) < BATCH:
            await state.feed.wait_beyond(last, timeout=ping)


def _seq(last_event_id: str | None) -> int | None:
    """The seq a ``Last-Event-ID`` names; None for anything that is not one (the header is ignored then)."""
    text = last_event_id or ""
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_INT64))):
        return None
    value = int(text)
    return value if value <= MAX_INT64 else None


@router.get(
    "/stream",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "One SSE message per logged event."}},
)
async def stream(
    request: Request,
    state: StateDep,
    caller: CallerDep,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_INT64, description="Start after this seq; default: the current head.")
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Live queue changes as server-sent events; ``data`` is a JSON summary of one logged event."""
    start = after
    if (seen := _seq(last_event_id)) is not None:  # a reconnect: resume after what the client already has
        start = max(start or 0, seen)
    if start is None:
        start = (await anyio.to_thread.run_sync(state.queue.store.audit_head))[0]
    return EventSourceResponse(_events(state, request, start), ping=max(1, int(state.settings.stream_ping_seconds)))

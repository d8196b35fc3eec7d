"""What the model reads about a call crossgate applied before: it ran, it was answered, or it may have run.

A run resumed again (a worker took over after a crash, an SDK replayed a snapshot) meets calls whose
decision was applied already. They never run twice; the model is told what happened the first time,
from the outcome the audit log recorded, so it neither repeats the call nor believes it failed.
"""

from __future__ import annotations

from collections.abc import Iterable

from crossgate.model import Event, EventKind, event_kind, is_outcome


def already_applied_message(tool: str, request_id: str, outcome: Event | None) -> str:
    """The tool output for a call whose decision was applied before, given its recorded outcome event."""
    if outcome is None:
        return (
            f"crossgate did not run {tool} again: request {request_id} was applied before, but no outcome was "
            "recorded, so it may or may not have taken effect. Do not retry it; tell the user to check."
        )
    payload = outcome.payload
    result, error = payload.get("result"), payload.get("error")
    if event_kind(outcome) == EventKind.RAN:
        ran = f"{tool} already ran for this call (request {request_id})"
        if error:
            return f"{ran} and failed: {error}. It was not run again."
        return f"{ran}; it was not run again. Its result was: {result}"
    return str(result or error or f"crossgate did not run {tool}: request {request_id} was answered before.")


def outcome_in(events: Iterable[Event]) -> Event | None:
    """The outcome event (``ran`` or ``not_run``) that followed the ``applied`` one in a request's events."""
    applied = False
    for event in events:
        if event.kind == EventKind.APPLIED:
            applied = True
        elif applied and is_outcome(event):
            return event
    return None

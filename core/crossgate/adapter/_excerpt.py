"""The run excerpt an adapter may hand the queue with a request: short, size-capped, oldest parts dropped first."""

from __future__ import annotations

from collections.abc import Iterable

from crossgate.model import RunExcerpt

EXCERPT_BYTES = 4096
"""The most an excerpt holds, in UTF-8 bytes over all its texts."""
PART_CHARS = 500
"""The most one part (the request, a message, a call) keeps; a longer one ends in ``…``."""
LAST_MESSAGES = 3
LAST_CALLS = 5


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PART_CHARS else text[: PART_CHARS - 1] + "…"


def _size(parts: Iterable[str]) -> int:
    return sum(len(p.encode("utf-8")) for p in parts)


def run_excerpt(
    *, user_request: str | None = None, messages: Iterable[str] = (), calls: Iterable[str] = ()
) -> RunExcerpt | None:
    """An excerpt of the run for the reviewer, or None when there is nothing to show.

    Each part is folded onto one line and clipped to :data:`PART_CHARS`; the last :data:`LAST_MESSAGES`
    messages and :data:`LAST_CALLS` calls are kept, and then the oldest calls and messages are dropped
    until the whole fits :data:`EXCERPT_BYTES`.
    """
    request = _clip(user_request) if user_request and user_request.strip() else None
    kept_messages = [_clip(m) for m in messages if m and m.strip()][-LAST_MESSAGES:]
    kept_calls = [_clip(c) for c in calls if c and c.strip()][-LAST_CALLS:]
    while _size([request or "", *kept_messages, *kept_calls]) > EXCERPT_BYTES:
        if kept_calls:
            kept_calls.pop(0)
        elif kept_messages:
            kept_messages.pop(0)
        else:
            break
    if request is None and not kept_messages and not kept_calls:
        return None
    return RunExcerpt(user_request=request, messages=tuple(kept_messages), calls=tuple(kept_calls))

"""The one crossing from an adapter's async SDK code into the synchronous queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def store_call(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Call the queue method ``fn`` from async SDK code; inline, on the event loop's thread.

    Inline on purpose: a queue call is one short store transaction (an indexed read or one write with
    its audit event), cheaper than the hop to a worker thread and back that would sit on every allowed
    tool call. The one long operation, waiting for a reviewer, is ``await queue.wait(...)``, which never
    blocks the loop. Going through this one function keeps the choice in one place: a queue whose calls
    may block for long (a remote one) changes it here, not in every adapter.
    """
    return fn(*args, **kwargs)

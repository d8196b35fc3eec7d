"""``ChangeFeed``: one watcher of the store's event log per server, fanned out to every listener.

The event log is the source of truth for "something changed", so a decision made by another process
(the CLI, a second server, a worker) reaches the page's live stream and the webhooks just like one made
here. One thread blocks in ``Store.wait_for_change``; listeners (stream clients, the notifier) await an
asyncio condition instead of each holding a thread. The feed also expires overdue requests, once every
``sweep_seconds``, so a page shows an expiry without anyone waiting on the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time

import anyio

from crossgate.queue import ReviewQueue

log = logging.getLogger(__name__)


class ChangeFeed:
    """Tracks the head of the event log and wakes listeners when it moves."""

    def __init__(self, queue: ReviewQueue, *, sweep_seconds: float = 1.0) -> None:
        self._queue = queue
        self._sweep = sweep_seconds
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.head = 0

    async def start(self) -> None:
        """Read the current head and start watching."""
        self.head = (await anyio.to_thread.run_sync(self._queue.store.audit_head))[0]
        self._task = asyncio.create_task(self._watch(), name="crossgate-feed")

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def poke(self) -> None:
        """Re-read the head now (after a change made through this server)."""
        latest = (await anyio.to_thread.run_sync(self._queue.store.audit_head))[0]
        await self._advance(latest)

    async def wait_beyond(self, seq: int, timeout: float) -> int:
        """Wait until the head passes ``seq`` or ``timeout`` seconds pass; return the head."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(lambda: self.head > seq), timeout)
            return self.head

    async def _advance(self, latest: int) -> None:
        if latest > self.head:
            async with self._changed:
                self.head = max(self.head, latest)
                self._changed.notify_all()

    async def _watch(self) -> None:
        store = self._queue.store
        swept = -math.inf
        while True:
            try:
                # Expiries once a sweep, not at every change: while decisions stream in, the head moves
                # every few milliseconds, and a sweep each time was a thread hop and a query per change.
                if time.monotonic() - swept >= self._sweep:
                    swept = time.monotonic()
                    await anyio.to_thread.run_sync(self._queue.expire_overdue)
                latest = await anyio.to_thread.run_sync(
                    store.wait_for_change, self.head, self._sweep, abandon_on_cancel=True
                )
                await self._advance(latest)
            except asyncio.CancelledError:
                raise
            except Exception:  # a store hiccup must not end the feed; listeners time out meanwhile
                log.exception("crossgate change feed could not read the store")
                await asyncio.sleep(self._sweep)

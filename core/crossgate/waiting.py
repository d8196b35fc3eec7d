"""Wake-ups for callers waiting on decisions: one registry per queue, no polling loop per waiter.

A decision made in this process wakes its waiters directly. Decisions made by other processes reach
the registry through one watcher thread per queue that blocks in ``Store.wait_for_change`` (SQLite:
a short poll of the event counter; PostgreSQL: ``LISTEN``) while anyone waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

from crossgate.stores.base import Store

log = logging.getLogger(__name__)

WAKING_EVENTS = frozenset({"decided", "expired", "cancelled", "applied"})


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Waiter:
    __slots__ = ("_event", "_future", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop
        self._future: asyncio.Future[None] | None = loop.create_future() if loop else None
        self._event = None if loop else threading.Event()

    def wake(self) -> None:
        if self._loop is not None and self._future is not None:
            with contextlib.suppress(RuntimeError):  # the waiter's loop already closed
                self._loop.call_soon_threadsafe(_resolve, self._future)
        elif self._event is not None:
            self._event.set()

    async def wait_async(self, timeout: float | None) -> None:
        assert self._future is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._future, timeout)

    def wait_blocking(self, timeout: float | None) -> None:
        assert self._event is not None
        self._event.wait(timeout)


class WaitRegistry:
    """Waiters keyed by request id, and the watcher that wakes them on other processes' changes."""

    def __init__(self, store: Store, *, watch_timeout: float = 0.5) -> None:
        self._store = store
        self._watch_timeout = watch_timeout
        self._lock = threading.Lock()
        self._waiters: dict[str, set[_Waiter]] = {}
        self._watcher: threading.Thread | None = None
        self._closed = False

    def register(self, request_id: str, loop: asyncio.AbstractEventLoop | None) -> _Waiter:
        """Add a waiter (async when ``loop`` is given, else blocking) and make sure the watcher runs."""
        waiter = _Waiter(loop)
        with self._lock:
            self._waiters.setdefault(request_id, set()).add(waiter)
            if self._watcher is None and not self._closed:
                # Read the head before the caller looks at its request, not in the new thread: a decision
                # committed between that look and the thread's first read would otherwise never wake it.
                head = self._store.audit_head()[0]
                self._watcher = threading.Thread(
                    target=self._watch, args=(head,), name="crossgate-watcher", daemon=True
                )
                self._watcher.start()
        return waiter

    def unregister(self, request_id: str, waiter: _Waiter) -> None:
        """Remove a waiter once its wait is over."""
        with self._lock:
            waiters = self._waiters.get(request_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[request_id]

    def notify(self, request_id: str) -> None:
        """Wake everyone waiting on ``request_id``."""
        with self._lock:
            waiters = list(self._waiters.get(request_id, ()))
        for waiter in waiters:
            waiter.wake()

    @property
    def waiting(self) -> int:
        """How many waiters are registered."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())

    def close(self) -> None:
        """Stop the watcher thread."""
        with self._lock:
            self._closed = True
            watcher = self._watcher
        if watcher is not None:
            watcher.join(timeout=self._watch_timeout * 4)

    def _watch(self, last: int) -> None:
        idle_rounds = 0
        while True:
            with self._lock:
                if self._closed or (not self._waiters and idle_rounds >= 2):
                    self._watcher = None
                    return
                idle_rounds = 0 if self._waiters else idle_rounds + 1
            try:
                latest = self._store.wait_for_change(last, self._watch_timeout)
                if latest > last:
                    for event in self._store.list_events(after=last):
                        if event.kind in WAKING_EVENTS and event.request_id is not None:
                            self.notify(event.request_id)
                        last = max(last, event.seq)
                    if last < latest:  # committed but not listed yet (a partitioned log's write in flight)
                        threading.Event().wait(0.005)
            except Exception:  # the watcher must survive a store hiccup; waiters time out on their own
                log.exception("crossgate watcher could not read the store")
                threading.Event().wait(self._watch_timeout)

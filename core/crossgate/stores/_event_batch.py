"""Group commit for the audit log: events enqueued without waiting, committed together by one writer.

A policy ``auto_allowed``/``auto_denied`` record or an allowed call's outcome does not need its own
commit before the call goes on: nothing anybody does depends on it. Such events wait here, in order,
until the first of:

- the background writer's next flush, at most ``FLUSH_INTERVAL_SECONDS`` after the first of them;
- any other write of the store, which commits them first (SQLite: in its own transaction; PostgreSQL: in
  a transaction just before it), so they keep their place in the chain before the state change (a
  pause, a decision, an applied mark) that follows them;
- a read of the log or of its head in this process, and ``close``.

A batch commits in one transaction with one sync: its events are sealed one after the other, each
chained to the one before, and the chain head moves once, to the batch's last event.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable

from crossgate.errors import StoreError
from crossgate.model import NewEvent

FLUSH_INTERVAL_SECONDS = 0.05
"""How long the writer waits after the first enqueued event, so that later ones join its batch."""
IDLE_SECONDS = 1.0
"""How long the writer thread stays once there is nothing to write; the next event starts it again."""
RETRY_SECONDS = 0.2
"""How long the writer waits after a failed flush before it tries again."""


class EventBatch:
    """Events enqueued for the chain and not committed yet, and the writer thread that commits them.

    ``flush`` opens one write transaction of the store, which takes the events (:meth:`take`) and
    gives them back (:meth:`give_back`) if it fails. ``on_thread_exit`` runs in the writer thread as
    it ends (a SQLite store closes that thread's connection). When a flush fails, the next
    :meth:`add` raises the failure, so the call being recorded fails closed, until a flush succeeds.
    """

    def __init__(self, flush: Callable[[], None], *, on_thread_exit: Callable[[], None] = lambda: None) -> None:
        self._flush = flush
        self._on_thread_exit = on_thread_exit
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: list[NewEvent] = []
        self._failure: StoreError | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # A process that ends without closing the store still commits what it enqueued.
        self._exit_hook = _close_at_exit(weakref.ref(self))
        atexit.register(self._exit_hook)
        os.register_at_fork(after_in_child=_forget_in_child(weakref.ref(self)))

    def add(self, event: NewEvent) -> None:
        """Enqueue ``event``; StoreError if the last flush failed or the store is closed."""
        with self._lock:
            if self._failure is not None:
                raise StoreError(f"the audit log could not be written: {self._failure}") from self._failure
            if self._closed:
                raise StoreError("the store is closed")
            self._pending.append(event)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="crossgate-audit-writer", daemon=True)
                self._thread.start()
            elif len(self._pending) == 1:
                self._wake.notify()

    @property
    def pending(self) -> int:
        """How many events wait for their commit."""
        return len(self._pending)

    def take(self) -> list[NewEvent]:
        """Every waiting event, in order, for the caller's transaction to append."""
        with self._lock:
            events, self._pending = self._pending, []
            return events

    def give_back(self, events: list[NewEvent]) -> None:
        """Put back, in front, the events of a transaction that rolled back."""
        if events:
            with self._lock:
                self._pending[:0] = events

    def committed(self) -> None:
        """A transaction that took the waiting events committed: a past failure no longer stands."""
        if self._failure is not None:
            with self._lock:
                self._failure = None

    def close(self) -> None:
        """Stop the writer, then commit what is left in this thread (StoreError if that fails)."""
        with self._lock:
            self._closed = True
            thread = self._thread
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        atexit.unregister(self._exit_hook)
        if self._pending:
            self._flush()

    def _run(self) -> None:
        try:
            while self._next_batch():
                try:
                    self._flush()
                    self.committed()
                except StoreError as exc:
                    with self._lock:
                        self._failure = exc
                        if not self._closed:
                            self._wake.wait(RETRY_SECONDS)
        finally:
            self._on_thread_exit()

    def _next_batch(self) -> bool:
        """Wait for events (True, after the flush interval) or for the end of the thread (False)."""
        with self._lock:
            if not self._pending and not self._closed:
                self._wake.wait(IDLE_SECONDS)
            if not self._pending or self._closed:
                self._thread = None
                return False
            self._wake.wait(FLUSH_INTERVAL_SECONDS)  # close() cuts it short
            return self._still_open()

    def _still_open(self) -> bool:
        """True unless the store closed (the thread then ends; ``close`` commits what is left)."""
        if self._closed:
            self._thread = None
        return not self._closed


def _forget_in_child(ref: weakref.ref[EventBatch]) -> Callable[[], None]:
    # A forked child has no writer thread, and the events waiting are its parent's to commit.
    def hook() -> None:
        batch = ref()
        if batch is not None:
            batch._pending, batch._thread = [], None
            batch._lock = threading.Lock()
            batch._wake = threading.Condition(batch._lock)

    return hook


def _close_at_exit(ref: weakref.ref[EventBatch]) -> Callable[[], None]:
    def hook() -> None:
        batch = ref()
        if batch is not None:
            batch.close()

    return hook

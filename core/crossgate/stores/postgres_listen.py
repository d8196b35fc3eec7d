"""``Listener`` and ``Notifier``: one ``LISTEN`` and one ``NOTIFY`` connection per PostgreSQL store, so
waiters wake on other processes' events.

A ``NOTIFY`` is not sent by the write that makes an event: PostgreSQL holds one lock for the whole server
from a notifying transaction's pre-commit until its commit is flushed (``async.c``, ``PreCommit_Notify``),
so every write that notified in its own transaction queued behind every other's commit, whatever rows it
touched. The ``Notifier`` sends the newest committed seq after the commit instead, from a thread of its
own, in transactions that do not wait for their commit to be flushed (a wake-up carries no state), several
writes' wake-ups in one. A wake-up lost to a crash between a commit and its ``NOTIFY`` is repaired by the
``Listener``, which also reads the head every ``POLL_SECONDS``; while its connection is down, ``wait``
returns None and the store falls back to polling the chain head.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often the listener reads the head itself, for a wake-up that was never sent."""


class Listener:
    """One ``LISTEN`` connection per store, started by the first wait, that tracks the newest event seq."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        channel: str,
        read_head: Callable[[psycopg.Connection[Any]], int],
    ) -> None:
        self._connect = connect
        self._channel = channel
        self._read_head = read_head
        self._changed = threading.Condition()
        self._latest = 0
        self._healthy = False
        self._tried = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def observe(self, seq: int) -> None:
        """Record that events up to ``seq`` exist (from a notification, or a write of this process)."""
        with self._changed:
            if seq > self._latest:
                self._latest = seq
                self._changed.notify_all()

    def wait(self, after: int, timeout: float) -> int | None:
        """The newest seq once it passes ``after`` or ``timeout`` runs out; None while LISTEN is down."""
        deadline = time.monotonic() + timeout
        with self._changed:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name=f"{self._channel}-listen", daemon=True)
                self._thread.start()
            self._changed.wait_for(lambda: self._tried or self._closed, timeout)
            if not self._healthy:
                return None
            self._changed.wait_for(
                lambda: self._latest > after or self._closed or not self._healthy, max(0.0, deadline - time.monotonic())
            )
            return self._latest if self._healthy else None

    def close(self) -> None:
        """Stop listening; waiters return at once."""
        with self._changed:
            self._closed = True
            thread = self._thread
            self._changed.notify_all()
        if thread is not None:
            thread.join(timeout=2.0)

    def _run(self) -> None:
        backoff = 0.1
        while not self._closed:
            try:
                with self._connect() as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                    seq = self._read_head(conn)
                    with self._changed:
                        self._healthy = self._tried = True
                    self.observe(int(seq))
                    backoff = 0.1
                    polled = time.monotonic()
                    while not self._closed:
                        for note in conn.notifies(timeout=0.25):
                            self.observe(int(note.payload))
                        if time.monotonic() - polled >= POLL_SECONDS:
                            self.observe(int(self._read_head(conn)))
                            polled = time.monotonic()
            except (psycopg.Error, ValueError):
                log.warning("crossgate: LISTEN on %s failed; retrying", self._channel, exc_info=True)
            with self._changed:
                self._healthy = False
                self._tried = True
                self._changed.notify_all()
            if not self._closed:
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


class Notifier:
    """Sends ``NOTIFY`` with the newest committed seq after the commit, from one thread and connection.

    ``sent`` never waits for the database: a write that has committed hands over its seq and goes on.
    Wake-ups that arrive while one is being sent go out together, as the newest seq.
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], channel: str) -> None:
        self._connect = connect
        self._channel = channel
        self._cond = threading.Condition()
        self._wanted = 0
        self._done = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    def sent(self, seq: int) -> None:
        """Wake the other processes' listeners: events up to ``seq`` are committed."""
        with self._cond:
            if self._closed or seq <= self._wanted:
                return
            self._wanted = seq
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self._channel}-notify", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        """Send what is still wanted (for a moment at most), then stop."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify()
        if thread is not None:
            thread.join(timeout=2.0)

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        backoff = 0.1
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._wanted > self._done or self._closed)
                if self._wanted <= self._done:
                    break
                seq = self._wanted
            try:
                if conn is None or conn.closed:
                    conn = self._connect()
                conn.execute("SELECT pg_notify(%s, %s)", (self._channel, str(seq)))
                self._done = seq
                backoff = 0.1
            except psycopg.Error:
                log.warning("crossgate: NOTIFY on %s failed; listeners poll", self._channel, exc_info=True)
                conn = None
                if self._closed:
                    break
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
        if conn is not None:
            conn.close()

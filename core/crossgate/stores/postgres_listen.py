"""``Listener``: one ``LISTEN`` connection per PostgreSQL store, so waiters wake on other processes' events.

Every event commits with a ``NOTIFY`` carrying its seq; the listener tracks the newest seq seen (or
written by this process) and wakes whoever waits for a change. While the connection is down, ``wait``
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
                    while not self._closed:
                        for note in conn.notifies(timeout=0.25):
                            self.observe(int(note.payload))
            except (psycopg.Error, ValueError):
                log.warning("crossgate: LISTEN on %s failed; retrying", self._channel, exc_info=True)
            with self._changed:
                self._healthy = False
                self._tried = True
                self._changed.notify_all()
            if not self._closed:
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

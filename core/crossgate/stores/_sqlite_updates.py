"""The SQLite store's request updates: decisions and the other compare-and-sets, group-committed (a part of
``SqliteStore``; the generic queue is ``crossgate.stores._update_batch``)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from crossgate.errors import StoreError
from crossgate.model import ApprovalRequest, Event, NewEvent, RequestStatus
from crossgate.stores._signatures import request_body, request_signatures
from crossgate.stores._update_batch import MovedHints, Update, UpdateQueue, commit_together

_HEAD_COLUMNS = "(SELECT seq FROM audit_head WHERE one = 1), (SELECT hash FROM audit_head WHERE one = 1)"


class _Host(Protocol):
    _write_lock: threading.Lock
    _moved: MovedHints
    _updates: UpdateQueue

    def _locked_write(self, write: str) -> AbstractContextManager[sqlite3.Connection]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def _insert_sealed(
        self, conn: sqlite3.Connection, news: Sequence[NewEvent], head: tuple[Any, ...]
    ) -> list[Event]: ...

    # the mixin's own steps, which call each other
    def _commit_updates(self, take: Callable[[], list[Update]]) -> None: ...
    def _update_together(self, updates: Sequence[Update]) -> list[Event | None]: ...
    def _moved_from(self, request_id: str, expected: tuple[str, ...]) -> bool: ...


class RequestUpdatesMixin:
    """``Store.update_request`` (decide, mark applied, expire, cancel), committed in groups (``_update_batch``)."""

    def update_request(
        self: _Host, request: ApprovalRequest, expected: Sequence[RequestStatus], event: NewEvent
    ) -> Event | None:
        # The row is serialised before the write lock is taken: the lock (and SQLite's) is held only for SQL.
        # Updates that wait for the lock meanwhile commit in one transaction (``_update_batch``).
        statuses = tuple(s.value for s in expected)
        params = (
            request.status.value,
            epoch(request.expires_at),
            request_body(request),
            request_signatures(request),
            request.id,
            *statuses,
        )
        update = Update(request.id, request.status.value, statuses, params, event)
        return self._updates.submit(update, self._commit_updates)

    def _commit_updates(self: _Host, take: Callable[[], list[Update]]) -> None:
        """Commit the waiting updates (``_update_batch``): under the write lock, in one transaction."""
        with self._write_lock:
            todo: list[Update] = []
            for update in take():
                try:
                    lost = self._moved_from(update.request_id, update.expected)
                except StoreError as exc:
                    update.finish(error=exc)
                    continue
                if lost:
                    update.finish(None)
                else:
                    todo.append(update)
            if not todo:
                return
            commit_together(todo, self._update_together)

    def _update_together(self: _Host, updates: Sequence[Update]) -> list[Event | None]:
        """The compare-and-sets of ``updates`` in one transaction, in order; each one's sealed event or None.

        The ``UPDATE``s run back to back, then the events of those that succeeded are sealed one after the
        other and inserted by one statement, and the head moves once: the fewer statements, the shorter
        the transaction holds SQLite's write lock (each statement gives up the GIL, and under load getting
        it back is what takes longest). The head comes back with the compare-and-set (RETURNING), read
        in this transaction after the waiting events were appended; the ``UPDATE``s do not move it.
        """
        won: list[int] = []
        with self._locked_write("update_request") as conn:
            head: tuple[Any, ...] | None = None
            for index, update in enumerate(updates):
                returned = conn.execute(_update_sql(len(update.expected)), update.params).fetchall()
                if returned:
                    won.append(index)
                    head = head or returned[0]
            sealed = self._insert_sealed(conn, [updates[i].event for i in won], head) if head is not None else []
        results: list[Event | None] = [None] * len(updates)
        for index, event in zip(won, sealed, strict=True):  # committed: remember what moved
            results[index] = event
            self._moved.note(updates[index].request_id, updates[index].status)
        return results

    def _moved_from(self: _Host, request_id: str, expected: tuple[str, ...]) -> bool:
        """True when the request's committed status is not in ``expected``, read only for a request this
        store moved to a status outside ``expected`` (``MovedHints``).

        Called under the write lock: a lost race costs one read instead of a transaction (``BEGIN
        IMMEDIATE``, an ``UPDATE`` of no row, ``COMMIT``) that would hold SQLite's write lock for nothing.
        """
        if not self._moved.suspects(request_id, expected):
            return False
        rows = self._read("SELECT status FROM requests WHERE id = ?", (request_id,))
        return bool(rows) and rows[0][0] not in expected


def epoch(moment: datetime | None) -> float | None:
    """A moment as the SQLite tables keep it: seconds since the epoch (None stays NULL)."""
    return None if moment is None else moment.timestamp()


def _update_sql(expected: int) -> str:
    """A request's compare-and-set against ``expected`` statuses, returning the head (no row: refused)."""
    return (
        "UPDATE requests SET status = ?, expires_at = ?, body = ?, signatures = ?"
        f" WHERE id = ? AND status IN ({', '.join('?' for _ in range(expected))}) RETURNING {_HEAD_COLUMNS}"
    )

"""The SQLite store's request updates: decisions and the other compare-and-sets, group-committed (a part of
``SqliteStore``; the generic queue is ``crossgate.stores._update_batch``)."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from crossgate.errors import StoreError
from crossgate.model import ApprovalRequest, Event, NewEvent, RequestStatus
from crossgate.stores._signatures import request_body, request_signatures
from crossgate.stores._update_batch import Update, UpdateQueue, commit_together

MOVED_HINTS = 4096
"""How many requests one store remembers having moved (see ``SqliteStore._moved_from``)."""
_HEAD_COLUMNS = "(SELECT seq FROM audit_head WHERE one = 1), (SELECT hash FROM audit_head WHERE one = 1)"


class _Host(Protocol):
    _write_lock: threading.Lock
    _moved: OrderedDict[str, str]
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
    def _note_moved(self, request_id: str, status: str) -> None: ...


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
            self._note_moved(updates[index].request_id, updates[index].status)
        return results

    def _moved_from(self: _Host, request_id: str, expected: tuple[str, ...]) -> bool:
        """True when the request's committed status is not in ``expected``, looked up only for a request
        this store moved to a status outside ``expected`` (so a compare-and-set on it is lost).

        Called under the write lock. For the reviewers who lost a race for a request, it spares the
        transaction (``BEGIN IMMEDIATE``, an ``UPDATE`` of no row, ``COMMIT``) that would have told them
        so, and keeps them from holding SQLite's write lock for nothing. The hint never decides by
        itself: the status is read from the database (the latest commit of any process), and only a
        status outside ``expected`` there refuses the change, as the ``UPDATE`` would have at that moment.
        """
        moved = self._moved.get(request_id)
        if moved is None or moved in expected:
            return False
        rows = self._read("SELECT status FROM requests WHERE id = ?", (request_id,))
        return bool(rows) and rows[0][0] not in expected

    def _note_moved(self: _Host, request_id: str, status: str) -> None:
        """Remember (under the write lock, after the commit) that ``request_id`` now has ``status``."""
        self._moved[request_id] = status
        self._moved.move_to_end(request_id)
        if len(self._moved) > MOVED_HINTS:
            self._moved.popitem(last=False)


def epoch(moment: datetime | None) -> float | None:
    """A moment as the SQLite tables keep it: seconds since the epoch (None stays NULL)."""
    return None if moment is None else moment.timestamp()


def _update_sql(expected: int) -> str:
    """A request's compare-and-set against ``expected`` statuses, returning the head (no row: refused)."""
    return (
        "UPDATE requests SET status = ?, expires_at = ?, body = ?, signatures = ?"
        f" WHERE id = ? AND status IN ({', '.join('?' for _ in range(expected))}) RETURNING {_HEAD_COLUMNS}"
    )

"""The SQLite store's delivery cursors: one row each in ``delivery_cursors``, bookkeeping with no event (a part
of ``SqliteStore``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from crossgate.stores._sqlite_updates import epoch
from crossgate.stores.cursors import (
    DeliveryCursor,
    check_delivery_cursor_args,
    delivery_cursor_advanceable,
    delivery_cursor_claimable,
)

_CURSOR_SELECT = "SELECT name, seq, lease_owner, lease_until FROM delivery_cursors"


class _Host(Protocol):
    def _write(self, write: str) -> AbstractContextManager[sqlite3.Connection]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    # the mixin's own steps
    def _locked_cursor(self, conn: sqlite3.Connection, name: str) -> DeliveryCursor | None: ...
    def _store_cursor(self, conn: sqlite3.Connection, cursor: DeliveryCursor) -> DeliveryCursor: ...


class DeliveryCursorsMixin:
    """``DeliveryCursors``: claim, advance, release and read a named cursor under the write lock."""

    def _locked_cursor(self: _Host, conn: sqlite3.Connection, name: str) -> DeliveryCursor | None:
        row = conn.execute(f"{_CURSOR_SELECT} WHERE name = ?", (name,)).fetchone()
        return _cursor_from_row(row) if row else None

    def _store_cursor(self: _Host, conn: sqlite3.Connection, cursor: DeliveryCursor) -> DeliveryCursor:
        conn.execute(
            "INSERT INTO delivery_cursors (name, seq, lease_owner, lease_until) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET"
            " seq = excluded.seq, lease_owner = excluded.lease_owner, lease_until = excluded.lease_until",
            (cursor.name, cursor.seq, cursor.lease_owner, epoch(cursor.lease_until)),
        )
        return cursor

    def claim_delivery_cursor(
        self: _Host, name: str, owner: str, now: datetime, lease_until: datetime, start: int
    ) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, start)
        with self._write("claim_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None:
                return self._store_cursor(conn, DeliveryCursor(name, start, owner, lease_until))
            if not delivery_cursor_claimable(current, owner, now):
                return None
            return self._store_cursor(conn, DeliveryCursor(name, current.seq, owner, lease_until))

    def advance_delivery_cursor(
        self: _Host, name: str, owner: str, seq: int, lease_until: datetime
    ) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, seq)
        with self._write("advance_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None or not delivery_cursor_advanceable(current, owner, seq):
                return None
            return self._store_cursor(conn, DeliveryCursor(name, seq, owner, lease_until))

    def release_delivery_cursor(self: _Host, name: str, owner: str) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner)
        with self._write("release_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None or current.lease_owner != owner:
                return None
            return self._store_cursor(conn, DeliveryCursor(name, current.seq))

    def get_delivery_cursor(self: _Host, name: str) -> DeliveryCursor | None:
        rows = self._read(f"{_CURSOR_SELECT} WHERE name = ?", (name,))
        return _cursor_from_row(rows[0]) if rows else None


def _cursor_from_row(row: tuple[Any, ...]) -> DeliveryCursor:
    name, seq, owner, until = row
    return DeliveryCursor(name, int(seq), owner, None if until is None else datetime.fromtimestamp(until, UTC))

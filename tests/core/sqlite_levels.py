"""Which ``PRAGMA synchronous`` level committed each audit event of a SqliteStore (a test helper)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from crossgate.stores.sqlite import SqliteStore

FULL, NORMAL = 2, 1


def commit_levels(store: SqliteStore) -> Callable[[], dict[str, set[int]]]:
    """Record each write's level and the audit head at its BEGIN; the returned function maps the kinds of
    the events committed since to the levels of the transactions that committed them."""
    starts: list[tuple[int, int]] = []

    def hook(write: str, conn: sqlite3.Connection) -> None:
        level = conn.execute("PRAGMA synchronous").fetchone()[0]
        starts.append((conn.execute("SELECT seq FROM audit_head").fetchone()[0], level))

    store._write_hook = hook

    def levels() -> dict[str, set[int]]:
        seen = list(starts)
        reader = SqliteStore(store.path)  # the store itself may be closed by now
        events = reader.list_events(after=seen[0][0])
        reader.close()
        by_kind: dict[str, set[int]] = {}
        for event in events:
            # Writes are serialised: an event belongs to the last transaction that began below its seq.
            level = [lvl for head, lvl in seen if head < event.seq][-1]
            by_kind.setdefault(event.kind, set()).add(level)
        return by_kind

    return levels

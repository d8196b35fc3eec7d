"""The delete-ticket world of the adapter scenarios: a ticket table in a SQLite file that every process can see."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

DEFAULT_TICKETS = ("t1", "t2", "t3")


class TicketStore:
    """Tickets plus a log of every delete that actually ran, shared across processes through one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY)")
            db.execute("CREATE TABLE IF NOT EXISTS deletes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def seed(self, ids: Iterable[str] = DEFAULT_TICKETS) -> None:
        """Create the tickets (idempotent)."""
        with self._connect() as db:
            db.executemany("INSERT OR IGNORE INTO tickets (id) VALUES (?)", [(i,) for i in ids])

    def ids(self) -> list[str]:
        """Ticket ids that still exist, sorted."""
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT id FROM tickets ORDER BY id")]

    def delete(self, ticket_id: str) -> str:
        """The tool body: delete one ticket and log that the delete ran. Returns the tool's output text."""
        with self._connect() as db:
            db.execute("INSERT INTO deletes (id) VALUES (?)", (ticket_id,))
            gone = db.execute("DELETE FROM tickets WHERE id = ?", (ticket_id,)).rowcount
        return f"deleted ticket {ticket_id}" if gone else f"ticket {ticket_id} does not exist"

    def delete_runs(self, ticket_id: str | None = None) -> int:
        """How many times the delete tool body ran (for one ticket, or in all)."""
        with self._connect() as db:
            if ticket_id is None:
                return int(db.execute("SELECT count(*) FROM deletes").fetchone()[0])
            return int(db.execute("SELECT count(*) FROM deletes WHERE id = ?", (ticket_id,)).fetchone()[0])

"""The attacker's own access to a crossgate database: plain SQL on SQLite or PostgreSQL, no crossgate code, no key."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Protocol

from crossgate.audit import GENESIS_HASH
from crossgate.model import Event


class Raw(Protocol):
    """Statements with ``?`` placeholders, and the whole log replaced at once."""

    url: str

    def execute(self, statement: str, *params: Any) -> None: ...
    def write_log(self, events: list[Event]) -> None: ...
    def bump_rules_version(self) -> None:
        """Move the rules version, as any stored rule or policy change does (so queues read them again)."""


def raw_access(url: str) -> Raw:
    """Plain access to the database that ``url`` (a SQLite path or a PostgreSQL URL with ``?schema=``) names."""
    return RawPostgres(url) if url.startswith(("postgresql://", "postgres://")) else RawSqlite(url)


class RawSqlite:
    def __init__(self, url: str) -> None:
        self.url = url

    def bump_rules_version(self) -> None:
        self.execute("UPDATE rules_version SET version = version + 1")

    def execute(self, statement: str, *params: Any) -> None:
        with sqlite3.connect(self.url) as conn:
            conn.execute(statement, params)

    def write_log(self, events: list[Event]) -> None:
        """Replace the whole log with ``events`` and point the head at the last one."""
        with sqlite3.connect(self.url) as conn:
            conn.execute("DELETE FROM events")
            conn.executemany(
                "INSERT INTO events (seq, at, kind, request_id, run, actor, channel, payload, prev_hash, hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_row(e) for e in events],
            )
            conn.execute("UPDATE audit_head SET seq = ?, hash = ?", _head(events))


class RawPostgres:
    def __init__(self, url: str) -> None:
        from crossgate.stores.postgres import split_url

        self.url = url
        self._conninfo, self._schema = split_url(url)

    def _connect(self) -> Any:
        import psycopg

        conn = psycopg.connect(self._conninfo, autocommit=True)
        conn.execute(f"SET search_path = {self._schema}")
        return conn

    def execute(self, statement: str, *params: Any) -> None:
        with self._connect() as conn:
            conn.execute(statement.replace("?", "%s"), params)

    def bump_rules_version(self) -> None:
        self.execute("UPDATE audit_head SET rules_version = rules_version + 1")  # a column since migration 007

    def write_log(self, events: list[Event]) -> None:
        with self._connect() as conn, conn.transaction():
            conn.execute("DELETE FROM events")
            for e in events:
                conn.execute(
                    "INSERT INTO events (seq, at, kind, request_id, data) VALUES (%s, %s, %s, %s, %s)",
                    (e.seq, e.at, e.kind, e.request_id, e.model_dump_json()),
                )
            conn.execute("UPDATE audit_head SET seq = %s, hash = %s", _head(events))


def _row(e: Event) -> tuple[Any, ...]:
    payload = json.dumps(e.payload, ensure_ascii=False)
    return (e.seq, e.at.isoformat(), e.kind, e.request_id, e.run, e.actor, e.channel, payload, e.prev_hash, e.hash)


def _head(events: list[Event]) -> tuple[int, str]:
    return (events[-1].seq, events[-1].hash) if events else (0, GENESIS_HASH)

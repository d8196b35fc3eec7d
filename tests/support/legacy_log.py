"""The fixtures of a log written before ``rejected``/``answered`` statuses and ``ran``/``not_run`` outcomes.

``tests/core/test_outcome_names_migration.py`` and ``tests/postgres/test_outcome_names_migration.py``
open them with the current code. They were written by crossgate at commit 4c1540e (SQLite schema 4,
PostgreSQL schema 3), with that commit's ``core`` first on the path::

    PYTHONPATH=<checkout of 4c1540e>/core CROSSGATE_TEST_POSTGRES_URL=... python -m tests.support.legacy_log

The scenario uses only calls that commit had, so it can be run there again to check a fixture.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SQLITE_DUMP = FIXTURES / "legacy_sqlite_v4.sql"
POSTGRES_ROWS = FIXTURES / "legacy_postgres_v3.json"
TRICKY_ARGS: dict[str, Any] = {
    "id": "t3",
    "big": 1e20,
    "zero": -0.0,
    "long": 12345678901234567890123,
    "text": "é\u2028\\n",
    "nested": {"status": "applied", "fingerprint": "0" * 64},
}
"""Arguments whose JSON text a careless migration would change: number forms, escapes, a nested
``"status":"applied"``. The bodies must keep every byte of them."""
IDS = {
    "approved": "req_approved",
    "rejected": "req_rejected",
    "answered": "req_answered",
    "decided": "req_decided_reject",
    "pending": "req_pending",
    "cancelled": "req_cancelled",
}


EXPECTED_STATUSES = {
    "approved": "applied",
    "rejected": "rejected",
    "answered": "answered",
    "decided": "decided",
    "pending": "pending",
    "cancelled": "cancelled",
}
"""What each request reads after the migration (``applied`` before it, for the first three)."""
EXPECTED_OUTCOMES = {"approved": "ran", "rejected": "not_run", "answered": "not_run"}


def migrated_body(name: str, old: str) -> str:
    """The body the migration should leave: the old text, byte for byte, but for the top-level status."""
    status = EXPECTED_STATUSES[name]
    if status == "rejected" or status == "answered":
        top = old.index('","status":"applied"', old.index(',"fingerprint":"'))
        cut = top + len('","status":"')
        return old[:cut] + status + old[cut + len("applied") :]
    return old


def check_migrated(store: Any, old_bodies: dict[str, str], new_bodies: dict[str, str]) -> None:
    """What a log written by the old code must be once the current code opened it (current code only)."""
    from crossgate import Approve, ReviewQueue
    from crossgate.model import RequestStatus, event_kind
    from crossgate.stores import RequestQuery

    queue = ReviewQueue(store)
    for name, request_id in IDS.items():
        assert queue.get(request_id).status.value == EXPECTED_STATUSES[name], name
        assert new_bodies[request_id] == migrated_body(name, old_bodies[request_id]), name
    # The status column moved with the body: the store filters on it.
    found = queue.list_requests(RequestQuery(statuses=(RequestStatus.REJECTED, RequestStatus.ANSWERED)))
    assert sorted(r.id for r in found.items) == [IDS["answered"], IDS["rejected"]]
    assert [r.id for r in queue.list_requests(RequestQuery(statuses=(RequestStatus.APPLIED,))).items] == [
        IDS["approved"]
    ]
    # The events are the old ones, chained as written: the outcomes still say ``executed``, and read as ran/not_run.
    assert queue.verify_audit().ok
    stored = [e.kind for e in queue.events()]
    assert stored.count("executed") == 4 and "ran" not in stored and "not_run" not in stored
    for name, kind in EXPECTED_OUTCOMES.items():
        outcome = queue.outcome(IDS[name])
        assert outcome is not None and outcome.kind == "executed" and event_kind(outcome) == kind, name
    # New writes chain on: the new names, after the old ones.
    pending = queue.decide(IDS["pending"], Approve(), reviewer="ann")
    queue.mark_applied(pending, args=pending.call.args, actor="worker")
    queue.record_outcome(pending, ran=True, result="deleted ticket t6")
    queue.mark_applied(IDS["decided"], actor="worker")
    queue.record_outcome(IDS["decided"], ran=False, result="Not t5.")
    assert queue.get(IDS["pending"]).status is RequestStatus.APPLIED
    assert queue.get(IDS["decided"]).status is RequestStatus.REJECTED
    assert [e.kind for e in queue.events()][-4:] == ["applied", "ran", "applied", "not_run"]
    assert queue.verify_audit().ok


def write_scenario(store: Any) -> None:
    """Every kind of request an old log holds, written through the old queue."""
    from crossgate import Approve, ReviewQueue, ToolCall
    from crossgate.model import Reject, Respond, VerdictKind
    from crossgate.policy import Policy

    moments = iter(datetime(2026, 11, 30, 9, 0, tzinfo=UTC) + timedelta(seconds=i) for i in range(1000))
    queue = ReviewQueue(store, clock=lambda: next(moments))
    allowing = ReviewQueue(store, Policy(default=VerdictKind.ALLOW), clock=lambda: next(moments))

    def call(tool: str, args: dict[str, Any], call_id: str) -> ToolCall:
        return ToolCall(framework="openai-agents", tool=tool, args=args, call_id=call_id, run="run-old", agent="ops")

    read = call("read_ticket", {"id": "t1"}, "c0")
    allowing.submit(read)
    allowing.record_outcome(None, ran=True, result="ticket t1", call=read)
    for name, args in (("approved", TRICKY_ARGS), ("rejected", TRICKY_ARGS), ("answered", {"id": "t4"})):
        queue.submit(call("delete_ticket", args, f"c-{name}"), request_id=IDS[name])
    queue.submit(call("delete_ticket", {"id": "t5"}, "c-decided"), request_id=IDS["decided"])
    queue.submit(call("delete_ticket", {"id": "t6"}, "c-pending"), request_id=IDS["pending"])
    queue.submit(call("delete_ticket", {"id": "t7"}, "c-cancelled"), request_id=IDS["cancelled"])
    queue.decide(IDS["approved"], Approve(), reviewer="ann", channel="web")
    queue.mark_applied(IDS["approved"], args=TRICKY_ARGS, actor="worker")
    queue.record_outcome(IDS["approved"], ran=True, result="deleted ticket t3")
    queue.decide(IDS["rejected"], Reject(message="Keep t3: a customer needs it."), reviewer="ann", channel="cli")
    queue.mark_applied(IDS["rejected"], actor="worker")
    queue.record_outcome(IDS["rejected"], ran=False, result="Keep t3: a customer needs it.")
    queue.decide(IDS["answered"], Respond(content="t4 was archived by hand."), reviewer="bob", channel="web")
    queue.mark_applied(IDS["answered"], actor="worker")
    queue.record_outcome(IDS["answered"], ran=False, result="t4 was archived by hand.")
    queue.decide(IDS["decided"], Reject(message="Not t5."), reviewer="bob", channel="api")
    queue.cancel(IDS["cancelled"], reason="The run was stopped.", actor="ops")
    store.flush_events()
    assert queue.verify_audit().ok


def write_sqlite() -> None:
    from crossgate.stores.sqlite import SqliteStore

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "old.db"
        store = SqliteStore(path)
        store.setup()
        write_scenario(store)
        store.close()
        with sqlite3.connect(path) as db:
            SQLITE_DUMP.write_text("\n".join(db.iterdump()) + "\n", encoding="utf-8")


def write_postgres(url: str) -> None:
    import psycopg
    from psycopg import sql

    from crossgate.stores.postgres import PostgresStore

    schema = "legacy_fixture"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    store = PostgresStore(url, schema=schema)
    store.setup()
    write_scenario(store)
    store.close()
    tables = {"requests": "position", "events": "seq", "audit_head": "seq", "schema_version": "version"}
    rows: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for table, order in tables.items():
            query = sql.SQL("SELECT * FROM {}.{} ORDER BY {}").format(
                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(order)
            )
            cursor = conn.execute(query)
            names = [c.name for c in cursor.description or ()]
            rows[table] = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    for row in rows["schema_version"]:
        row.pop("applied_at")
    POSTGRES_ROWS.write_text(json.dumps(rows, indent=1, default=_iso, ensure_ascii=False) + "\n", encoding="utf-8")


def _iso(value: object) -> str:
    assert isinstance(value, datetime)
    return value.isoformat()


if __name__ == "__main__":
    FIXTURES.mkdir(exist_ok=True)
    write_sqlite()
    write_postgres(os.environ["CROSSGATE_TEST_POSTGRES_URL"])

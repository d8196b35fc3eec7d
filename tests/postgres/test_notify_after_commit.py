"""Wake-ups leave the write's transaction: no sealing function notifies, the store notifies after its commit,
and a listener whose wake-up never came reads the head itself."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg import sql

from crossgate import ReviewQueue, ToolCall
from crossgate.stores import postgres_listen
from crossgate.stores.postgres import PostgresStore

pytestmark = pytest.mark.postgres


def _call(n: int) -> ToolCall:
    return ToolCall(framework="langgraph", tool="delete_ticket", args={"id": n}, run=f"run-{n}")


def test_no_function_of_the_schema_sends_a_notify(pg_store: PostgresStore) -> None:
    with psycopg.connect(pg_store._conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = %s AND p.prosrc ILIKE %s",
            (pg_store.schema, "%notify%"),
        ).fetchall()
    assert rows == []


def test_another_store_wakes_on_the_wake_up_sent_after_the_commit(pg_store: PostgresStore) -> None:
    writer, watcher_store = pg_store, PostgresStore(pg_store.url)
    try:
        watcher_store.wait_for_change(0, timeout=0.5)  # starts the listener
        start = time.monotonic()
        ReviewQueue(writer).submit(_call(1))
        assert watcher_store.wait_for_change(0, timeout=5.0) >= 1
        # Well under the listener's own poll: the NOTIFY woke it.
        assert time.monotonic() - start < postgres_listen.POLL_SECONDS
    finally:
        watcher_store.close()


def test_a_lost_wake_up_is_repaired_by_the_listeners_poll(pg_store: PostgresStore) -> None:
    other = PostgresStore(pg_store.url)
    try:
        assert other.wait_for_change(0, timeout=0.5) == 0  # the listener is up
        # An event sealed behind the store's back: committed, but no process sends its wake-up.
        with psycopg.connect(pg_store._conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(pg_store.schema)))
            conn.execute("UPDATE audit_head SET seq = 7")
        start = time.monotonic()
        assert other.wait_for_change(0, timeout=5.0) == 7
        assert time.monotonic() - start < postgres_listen.POLL_SECONDS + 1.0
    finally:
        other.close()

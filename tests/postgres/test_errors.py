"""Driver failures become StoreError; bad options become ConfigurationError; duplicates a ConflictError."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crossgate import ConfigurationError, ReviewQueue, StoreError, ToolCall, open_store
from crossgate.stores.postgres import IDLE_CHECK_SECONDS, PostgresStore, split_url
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres

DEAD_URL = "postgresql://postgres@127.0.0.1:1/test"


def test_a_dead_server_is_a_store_error_at_setup_and_fast() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError, match="could not set up the schema") as caught:
        open_store(DEAD_URL)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert time.monotonic() - started < 5


def test_a_dead_server_is_a_store_error_for_every_operation() -> None:
    store = PostgresStore(DEAD_URL, timeout=0.5)
    try:
        with pytest.raises(StoreError, match="could not read req-1"):
            store.get_request("req-1")
        with pytest.raises(StoreError):
            store.audit_head()
    finally:
        store.close()


def test_connections_the_server_dropped_are_replaced_without_an_error(
    pg_store: PostgresStore, pg_queue: ReviewQueue
) -> None:
    request = pg_queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})).request
    assert request is not None
    with psycopg.connect(pg_store._conninfo, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (f"crossgate-{pg_store.schema}",),
        ).fetchone()
    assert killed is not None and killed[0] >= 1
    time.sleep(IDLE_CHECK_SECONDS + 0.1)
    assert pg_queue.get(request.id) == request  # the pool checks a connection idle that long
    assert pg_queue.get(request.id) == request


def test_missing_tables_are_a_store_error(pg_factory: PostgresStoreFactory) -> None:
    store = PostgresStore(pg_factory.url, schema=pg_factory.new_schema())  # setup() never ran
    try:
        with pytest.raises(StoreError, match=r"relation .*requests.* does not exist"):
            store.get_request("req-1")
    finally:
        store.close()


def test_a_duplicate_request_id_is_a_conflict_not_a_store_error(pg_queue: ReviewQueue) -> None:
    from crossgate import ConflictError

    request = pg_queue.submit(ToolCall(framework="langgraph", tool="t", args={})).request
    assert request is not None
    with pytest.raises(ConflictError, match="already exists"):
        pg_queue.store.insert_request(request, pg_queue._event("submitted", request))
    assert pg_queue.verify_audit().ok and pg_queue.verify_audit().checked == 1


@pytest.mark.parametrize("schema", ["Public", "a-b", "x" * 49, "1abc", "a;drop"])
def test_a_bad_schema_name_is_a_configuration_error(schema: str) -> None:
    with pytest.raises(ConfigurationError, match="schema name"):
        PostgresStore("postgresql://postgres@127.0.0.1/test", schema=schema)


def test_schema_comes_from_the_url_or_the_argument_and_is_stripped_from_the_libpq_url() -> None:
    assert split_url("postgresql://u@h:5/db?schema=tenant_a&sslmode=disable") == (
        "postgresql://u@h:5/db?sslmode=disable",
        "tenant_a",
    )
    assert split_url("postgresql://u@h/db") == ("postgresql://u@h/db", "crossgate")
    assert split_url("postgresql://u@h/db?schema=a", "b")[1] == "b"
    store = PostgresStore("postgresql://u@h/db?sslmode=disable", schema="tenant_b")
    assert store.url == "postgresql://u@h/db?sslmode=disable&schema=tenant_b"


def test_two_schemas_on_one_database_do_not_see_each_other(pg_factory: PostgresStoreFactory) -> None:
    a, b = pg_factory(), pg_factory()
    try:
        ReviewQueue(a).submit(ToolCall(framework="langgraph", tool="t", args={}))
        assert ReviewQueue(b).pending() == [] and b.audit_head()[0] == 0
        assert b.wait_for_change(0, timeout=0.2) == 0  # a's NOTIFY goes to a's channel only
    finally:
        a.close()
        b.close()


def test_audit_head_catches_a_deleted_last_event_and_a_changed_one(
    pg_store: PostgresStore, pg_queue: ReviewQueue
) -> None:
    from crossgate import Approve

    request = pg_queue.submit(ToolCall(framework="langgraph", tool="t", args={"id": "t1"})).request
    assert request is not None
    pg_queue.decide(request.id, Approve(), reviewer="ann")
    assert pg_queue.verify_audit().ok
    with psycopg.connect(pg_store._conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(pg_store.schema)))
        conn.execute("""UPDATE events SET data = replace(data, '"ann"', '"bob"') WHERE seq = 2""")
        changed = pg_queue.verify_audit()
        assert not changed.ok and changed.bad_seq == 2
        conn.execute("DELETE FROM events WHERE seq = 2")
    deleted = pg_queue.verify_audit()
    assert not deleted.ok and "recorded head is event 2" in (deleted.problem or "")


def test_url_options_are_kept_and_spaces_survive() -> None:
    store = PostgresStore("postgresql://u@h/db?options=-c%20statement_timeout%3D5000&application_name=me", schema="s")
    assert store._connect_kwargs["options"] == "-c statement_timeout=5000 -c search_path=s -c TimeZone=UTC -c jit=off"
    assert store._connect_kwargs["application_name"] == "me"
    assert "options=-c%20statement_timeout%3D5000" in store.url and store.url.endswith("schema=s")
    with pytest.raises(ConfigurationError, match="not a PostgreSQL URL"):
        PostgresStore("postgresql://u@h/db?bogus=1")


def test_wake_ups_survive_a_dropped_listen_connection(pg_store: PostgresStore) -> None:
    import threading

    from crossgate.model import NewEvent

    writer = PostgresStore(pg_store.url)  # another store: its writes reach pg_store only through the server
    try:

        def append_later(kind: str) -> threading.Timer:
            timer = threading.Timer(0.2, lambda: writer.append_event(NewEvent(kind=kind, at=writer_now())))
            timer.start()
            return timer

        assert pg_store.wait_for_change(0, timeout=0.1) == 0  # starts the listener
        with psycopg.connect(pg_store._conninfo, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
                (f"crossgate-{pg_store.schema}-listen",),
            ).fetchone()
        assert killed == (1,)
        timer = append_later("during_outage")
        started = time.monotonic()
        assert pg_store.wait_for_change(0, timeout=5) == 1
        assert time.monotonic() - started < 2
        timer.join()
        time.sleep(0.5)  # the listener is back
        timer = append_later("after_reconnect")
        started = time.monotonic()
        assert pg_store.wait_for_change(1, timeout=5) == 2
        assert time.monotonic() - started < 1
        timer.join()
    finally:
        writer.close()


def writer_now() -> Any:
    from crossgate.clock import utc_now

    return utc_now()

"""Events sealed by PostgreSQL (migration 011) are the events ``crossgate.audit.seal`` makes, byte for byte,
and the Python verifier catches any change to them; a log sealed in Python before the upgrade goes on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from crossgate import Approve, ReviewQueue, ToolCall
from crossgate.audit import GENESIS_HASH, seal, verify_log
from crossgate.model import NewEvent
from crossgate.stores.postgres import PostgresStore, migrations
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(pg_factory: PostgresStoreFactory) -> Iterator[PostgresStore]:
    """One audit chain: each event follows the one before, as the Python seal chains them."""
    store: PostgresStore = pg_factory(partitions=1)
    yield store
    store.close()


TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)  # any code point UTF-8 can carry
# (a request id is also a column of its own, and PostgreSQL's text refuses NUL: so it was before 010 too)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
NEW_EVENTS = st.builds(
    NewEvent,
    kind=st.sampled_from(["submitted", "decided", "ran", "rule_added"]),
    at=st.datetimes(timezones=st.just(UTC)),
    request_id=st.none() | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12),
    run=st.none() | TEXT,
    actor=st.none() | TEXT,
    channel=st.none() | TEXT,
    payload=st.dictionaries(TEXT, JSON, max_size=4),
)


def _sql(store: PostgresStore, *statements: str) -> None:
    with psycopg.connect(store._conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(store.schema)))
        for statement in statements:
            conn.execute(statement.encode())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(NEW_EVENTS, min_size=1, max_size=4))
def test_the_database_seals_each_event_as_python_does(pg_store: PostgresStore, events: list[NewEvent]) -> None:
    seq, prev = pg_store.audit_head()
    for new in events:
        stored = pg_store.append_event(new)
        expected = seal(new, seq=seq + 1, prev_hash=prev)
        assert stored == expected  # the hash, the seq, the previous hash: the Python seal's
        seq, prev = expected.seq, expected.hash
    assert (
        pg_store.list_events(after=seq - len(events))
        == [  # read back from the stored JSON
            seal(new, seq=e.seq, prev_hash=e.prev_hash)
            for new, e in zip(events, pg_store.list_events()[-len(events) :], strict=True)
        ]
    )
    assert verify_log(pg_store).ok


def test_enqueued_events_are_sealed_in_one_statement_and_verify(pg_store: PostgresStore) -> None:
    at = datetime(2026, 12, 2, tzinfo=UTC)
    for i in range(5):
        pg_store.enqueue_event(NewEvent(kind="ran", at=at + timedelta(seconds=i), payload={"i": i, "ü": 'ø"\\'}))
    pg_store.flush_events()
    events = pg_store.list_events()
    assert [e.seq for e in events] == [1, 2, 3, 4, 5] and events[0].prev_hash == GENESIS_HASH
    assert pg_store.audit_head() == (5, events[-1].hash)
    assert verify_log(pg_store).ok


def test_a_submission_is_one_statement_with_its_position(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    statements: list[str] = []
    original = psycopg.Connection.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return original(self, query, *args, **kwargs)

    psycopg.Connection.execute = counted  # type: ignore[method-assign]
    try:
        request = pg_queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})).request
    finally:
        psycopg.Connection.execute = original  # type: ignore[method-assign]
    assert request is not None
    writes = [s for s in statements if "crossgate_" in s]
    assert len(writes) == 1 and "crossgate_insert_request" in writes[0]
    assert not any("BEGIN" in s.upper() for s in statements)
    (event,) = pg_store.list_events()
    assert event.request_id == request.id and pg_queue.verify_audit().ok


def test_a_rewritten_deleted_or_reordered_database_sealed_event_is_caught(
    pg_store: PostgresStore, pg_queue: ReviewQueue
) -> None:
    for ticket in ("t1", "t2", "t3"):
        request = pg_queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket})).request
        assert request is not None
        pg_queue.decide(request.id, Approve(), reviewer="ann")
    assert verify_log(pg_store).ok and pg_store.audit_head()[0] == 6
    _sql(pg_store, "CREATE TABLE kept AS SELECT * FROM events")
    restore = ["DELETE FROM events", "INSERT INTO events SELECT * FROM kept"]

    _sql(pg_store, """UPDATE events SET data = replace(data, '"ann"', '"bob"') WHERE seq = 4""")
    changed = verify_log(pg_store)
    assert not changed.ok and changed.bad_seq == 4 and "changed" in (changed.problem or "")

    _sql(pg_store, *restore, "DELETE FROM events WHERE seq = 3")
    deleted = verify_log(pg_store)
    assert not deleted.ok and deleted.bad_seq == 4

    # Swap events 2 and 3 whole (their JSON, seq included): the log then runs 1, 3, 2.
    _sql(
        pg_store,
        *restore,
        "UPDATE events SET data = (SELECT data FROM kept WHERE seq = 3) WHERE seq = 2",
        "UPDATE events e SET data = (SELECT data FROM kept WHERE seq = 2) WHERE e.seq = 3",
    )
    reordered = verify_log(pg_store)
    assert not reordered.ok and reordered.bad_seq == 3

    _sql(pg_store, *restore, "DELETE FROM events WHERE seq = 6")
    cut = verify_log(pg_store)
    assert not cut.ok and "recorded head is event 6" in (cut.problem or "")

    _sql(pg_store, *restore)
    assert verify_log(pg_store).ok


def test_a_log_sealed_in_python_before_the_upgrade_goes_on_and_verifies(pg_factory: PostgresStoreFactory) -> None:
    schema = pg_factory.new_schema()
    old = [m for m in migrations() if m.version < 11]  # up to the one before sealing in the database
    assert [m.name for m in migrations() if m.version == 11] == ["database_sealing"]
    with psycopg.connect(pg_factory.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in old:
            conn.execute(migration.text.encode())
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)", (migration.version, migration.name)
            )
        prev = GENESIS_HASH
        for seq in (1, 2):  # events as the store before 010 wrote them: sealed in Python, dumped whole
            event = seal(
                NewEvent(kind="ran", at=datetime(2026, 12, 1, tzinfo=UTC), payload={"n": seq}), seq=seq, prev_hash=prev
            )
            conn.execute(
                "INSERT INTO events (seq, at, kind, request_id, data) VALUES (%s, %s, %s, NULL, %s)",
                (event.seq, event.at, event.kind, event.model_dump_json()),
            )
            prev = event.hash
        conn.execute("UPDATE audit_head SET seq = 2, hash = %s", (prev,))
    store = PostgresStore(pg_factory.url, schema=schema)
    try:
        store.setup()
        queue = ReviewQueue(store)
        request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})).request
        assert request is not None
        queue.decide(request.id, Approve(), reviewer="ann")
        events = store.list_events()
        assert [e.seq for e in events] == [1, 2, 3, 4] and events[2].prev_hash == prev
        assert verify_log(store).ok
    finally:
        store.close()


def test_a_batch_of_lost_races_writes_nothing(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    request = pg_queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})).request
    assert request is not None
    pg_queue.decide(request.id, Approve(), reviewer="ann")
    head = pg_store.audit_head()
    event = NewEvent(kind="decided", at=datetime.now(UTC), request_id=request.id)
    store2 = PostgresStore(pg_store.url)  # no hint of what moved: the database refuses it
    try:
        assert store2.update_request(request, [request.status], event) is None
    finally:
        store2.close()
    assert pg_store.audit_head() == head and verify_log(pg_store).ok

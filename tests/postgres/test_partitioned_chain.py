"""The audit log in N chains keyed by run (migration 013): each run's events chain in their partition,
writes on different partitions do not wait for each other, listing never passes a seq still in flight,
and N can be raised (never lowered) on a schema that has events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crossgate import Approve, ConfigurationError, ReviewQueue, ToolCall
from crossgate.audit import GENESIS_HASH, heads_root, verify_log
from crossgate.model import NewEvent
from crossgate.stores._partitions import DEFAULT_PARTITIONS, partition_of
from crossgate.stores._postgres_sealing import seal_params
from crossgate.stores.postgres import PostgresStore
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres

N = 4


def run_in(partition: int, n: int = N, *, avoid: str = "") -> str:
    """A run whose events go to ``partition`` among ``n``."""
    for i in range(10_000):
        run = f"run-{partition}-{avoid}-{i}"
        if partition_of(NewEvent(kind="noted", at=datetime.now(UTC), run=run), n) == partition:
            return run
    raise AssertionError("no run found")


def call(run: str, ticket: str) -> ToolCall:
    return ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run=run)


@pytest.fixture
def store(pg_factory: PostgresStoreFactory) -> Iterator[PostgresStore]:
    made: PostgresStore = pg_factory(partitions=N)
    yield made
    made.close()


def raw(store: PostgresStore) -> psycopg.Connection[Any]:
    conn = psycopg.connect(store._conninfo, autocommit=True)
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(store.schema)))
    return conn


def test_a_fresh_schema_has_the_default_partitions_and_an_empty_log_its_genesis(
    pg_factory: PostgresStoreFactory,
) -> None:
    fresh: PostgresStore = pg_factory()
    try:
        assert fresh.partitions() == DEFAULT_PARTITIONS
        assert fresh.audit_head() == (0, GENESIS_HASH)
        assert verify_log(fresh).ok
    finally:
        fresh.close()


def test_each_runs_events_chain_in_its_partition_and_the_head_is_the_root_of_every_head(
    store: PostgresStore,
) -> None:
    queue = ReviewQueue(store)
    runs = [run_in(p) for p in range(N)]
    for i, run in enumerate(runs * 2):
        request = queue.submit(call(run, f"t{i}")).request
        assert request is not None
        queue.decide(request.id, Approve(), reviewer="ann")
    events = store.list_events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # one writer: no gaps
    upto, heads = store.audit_cut()
    assert upto == events[-1].seq and len(heads) == N
    for partition, seq, digest in heads:
        mine = [e for e in events if e.run == runs[partition]]
        assert [e.prev_hash for e in mine] == [GENESIS_HASH] + [e.hash for e in mine[:-1]]
        assert (seq, digest) == (mine[-1].seq, mine[-1].hash)
    assert store.audit_head() == (upto, heads_root(heads))
    assert store.audit_head()[1] not in {e.hash for e in events}
    assert verify_log(store).ok


def _lock_partition(conn: psycopg.Connection[Any], partition: int) -> None:
    conn.execute("BEGIN")
    conn.execute("SELECT seq FROM audit_partitions WHERE partition = %s FOR UPDATE", (partition,))


def test_a_write_on_one_partition_does_not_wait_for_another_partitions_head(store: PostgresStore) -> None:
    queue = ReviewQueue(store)
    holder = raw(store)
    try:
        _lock_partition(holder, 1)  # a write on partition 1 that has not committed
        free = threading.Thread(target=lambda: queue.submit(call(run_in(2), "free")))
        free.start()
        free.join(5.0)
        assert not free.is_alive(), "a write on partition 2 waited for partition 1's head"
        stuck = threading.Thread(target=lambda: queue.submit(call(run_in(1), "stuck")))
        stuck.start()
        stuck.join(0.5)
        assert stuck.is_alive(), "a write on partition 1 did not wait for partition 1's head"
        holder.execute("COMMIT")
        stuck.join(5.0)
        assert not stuck.is_alive()
    finally:
        holder.close()
    assert len(queue.pending()) == 2 and verify_log(store).ok


def test_listing_stops_below_a_seq_still_in_flight_and_goes_on_once_it_commits(store: PostgresStore) -> None:
    early = NewEvent(kind="noted", at=datetime.now(UTC), run=run_in(1), payload={"n": 1})
    late = NewEvent(kind="noted", at=datetime.now(UTC), run=run_in(2), payload={"n": 2})
    store.append_event(NewEvent(kind="noted", at=datetime.now(UTC), run=run_in(3)))
    holder = raw(store)
    try:
        holder.execute("BEGIN")
        params = seal_params([early], N)
        (early_seq, _, _) = holder.execute(
            "SELECT * FROM crossgate_seal(%(partitions)s, %(before)s, %(between)s, %(bodies)s, %(ats)s,"
            " %(kinds)s, %(request_ids)s)",
            params,
        ).fetchone()  # type: ignore[misc]
        sealed_late = store.append_event(late)  # committed, after a seq that is not
        assert sealed_late.seq > early_seq
        listed = [e.seq for e in store.list_events()]
        assert sealed_late.seq not in listed, "a reader that moved past it would never see the earlier seq"
        assert all(seq < early_seq for seq in listed) and store.audit_head()[0] < early_seq
        holder.execute("COMMIT")
    finally:
        holder.close()
    assert [e.seq for e in store.list_events(after=1)] == [early_seq, sealed_late.seq]
    assert store.audit_head()[0] == sealed_late.seq and verify_log(store).ok


def test_n_can_be_raised_on_a_log_with_events_and_not_lowered(pg_factory: PostgresStoreFactory) -> None:
    one: PostgresStore = pg_factory(partitions=1)
    try:
        queue = ReviewQueue(one)
        for i in range(3):
            queue.submit(call(run_in(i, N), f"old{i}"))
        old_head = one.audit_head()
        raised = PostgresStore(one.url, partitions=N)
        try:
            raised.setup()
            assert raised.partitions() == N
            for i in range(N):
                ReviewQueue(raised).submit(call(run_in(i, N), f"new{i}"))
            events = raised.list_events()
            assert events[3].seq == old_head[0] + 1  # the sequence starts past the old seqs
            assert raised.audit_cut()[1][0][1] > old_head[0]  # partition 0 goes on from the old chain
            assert verify_log(raised).ok
            with pytest.raises(ConfigurationError, match="raised, not lowered"):
                PostgresStore(one.url, partitions=2).setup()
        finally:
            raised.close()
    finally:
        one.close()


def test_partitions_out_of_range_are_refused() -> None:
    for bad in (0, 1025):
        with pytest.raises(ConfigurationError, match="partitions"):
            PostgresStore("postgresql://u@h/db", partitions=bad)

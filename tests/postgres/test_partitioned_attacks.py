"""A partitioned log attacked by whoever holds the database: each partition is checked against its own head,
and the signed checkpoint and state head cover every head, so one partition rolled back, cut or rewritten
is found (the store-side rewrites use plain SQL, as an attacker with the database's password would)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crossgate import Approve, ReviewQueue, ToolCall
from crossgate.audit import heads_root, verify_log
from crossgate.authority import Authority
from crossgate.checkpoints import Checkpointer, verify_signed_log
from crossgate.state_head import HeadSigner
from crossgate.stores.postgres import PostgresStore
from tests.postgres.test_partitioned_chain import N, run_in
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_factory: PostgresStoreFactory) -> Iterator[PostgresStore]:
    made: PostgresStore = pg_factory(partitions=N)
    yield made
    made.close()


@pytest.fixture
def authority() -> Authority:
    return Authority.generate()


def execute(store: PostgresStore, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(store._conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(store.schema)))
        cur = conn.execute(statement.encode(), params)
        return cur.fetchall() if cur.description else []


def busy_log(store: PostgresStore, authority: Authority | None = None) -> ReviewQueue:
    """Two decided requests in each partition."""
    queue = ReviewQueue(store, authority=authority)
    for round_ in range(2):
        for partition in range(N):
            request = queue.submit(
                ToolCall(framework="langgraph", tool="delete_ticket", args={"n": round_}, run=run_in(partition))
            ).request
            assert request is not None
            queue.decide(request.id, Approve(), reviewer="ann")
    return queue


def newest_of(store: PostgresStore, partition: int, count: int = 1) -> list[int]:
    rows = execute(store, "SELECT seq FROM events WHERE partition = %s ORDER BY seq DESC LIMIT %s", (partition, count))
    return [int(r[0]) for r in rows]


def cut_partition(store: PostgresStore, partition: int, count: int, *, rewrite_head: bool) -> None:
    """Delete the newest ``count`` events of ``partition``; with ``rewrite_head``, point its head at what is left."""
    seqs = newest_of(store, partition, count)
    execute(store, "DELETE FROM events WHERE seq = ANY(%s)", (seqs,))
    if rewrite_head:
        seq, data = execute(
            store, "SELECT seq, data FROM events WHERE partition = %s ORDER BY seq DESC LIMIT 1", (partition,)
        )[0]
        (head_hash,) = execute(store, "SELECT %s::json ->> 'hash'", (data,))[0]
        if partition == 0:
            execute(store, "UPDATE audit_head SET seq = %s, hash = %s", (seq, head_hash))
        else:
            update = "UPDATE audit_partitions SET seq = %s, hash = %s WHERE partition = %s"
            execute(store, update, (seq, head_hash, partition))


def test_an_untouched_partitioned_log_verifies_against_its_checkpoint(
    store: PostgresStore, authority: Authority
) -> None:
    busy_log(store, authority)
    checkpoint = Checkpointer(store, authority).sign_head()
    assert checkpoint.head_hash == heads_root(store.audit_cut()[1])
    report = verify_signed_log(store, authority.trusted_keys())
    assert report.ok, report.problem


def test_the_newest_events_of_one_partition_deleted_are_found_by_its_head(store: PostgresStore) -> None:
    busy_log(store)
    cut_partition(store, 2, 2, rewrite_head=False)
    report = verify_log(store)
    assert not report.ok and "partition 2's recorded head" in (report.problem or "")


def test_one_partition_rolled_back_with_its_head_is_found_by_the_signed_checkpoint(
    store: PostgresStore, authority: Authority
) -> None:
    busy_log(store, authority)
    Checkpointer(store, authority).sign_head()
    cut_partition(store, 3, 2, rewrite_head=True)
    assert verify_log(store).ok, "the chains alone cannot tell: every partition ends at its head"
    report = verify_signed_log(store, authority.trusted_keys())
    assert not report.ok
    assert "rewritten" in (report.problem or "") or "removed" in (report.problem or ""), report.problem


def test_one_partitions_head_rewritten_alone_is_found(store: PostgresStore) -> None:
    busy_log(store)
    execute(store, "UPDATE audit_partitions SET hash = %s WHERE partition = 1", ("ab" * 32,))
    report = verify_log(store)
    assert not report.ok and "partition 1" in (report.problem or "")


def test_an_event_deleted_inside_a_partition_breaks_its_chain(store: PostgresStore) -> None:
    busy_log(store)
    oldest_but_one = newest_of(store, 1, 4)[-2]
    execute(store, "DELETE FROM events WHERE seq = %s", (oldest_but_one,))
    report = verify_log(store)
    assert not report.ok and "follows no event of its chain" in (report.problem or "")


def test_the_partition_column_is_bookkeeping_and_the_heads_say_whose_chain_is_whose(store: PostgresStore) -> None:
    busy_log(store)
    # Moved to another chain, it is still linked to its own: the heads say which chain is whose, so the
    # log verifies only if nothing else changed; the root a checkpoint signed names the partitions.
    newest = newest_of(store, 1)[0]
    execute(store, "UPDATE events SET partition = 2 WHERE seq = %s", (newest,))
    assert verify_log(store).ok  # the chains are what they were: the column is bookkeeping
    execute(store, "UPDATE audit_partitions SET seq = 0 WHERE partition = 1")
    assert not verify_log(store).ok


def test_the_state_head_signs_the_root_of_every_head_and_a_rollback_changes_it(
    store: PostgresStore, authority: Authority
) -> None:
    busy_log(store)
    signed = HeadSigner(store, authority).sign()
    assert (signed.audit_seq, signed.audit_hash) == store.audit_head()
    assert signed.audit_hash == heads_root(store.audit_cut()[1])
    cut_partition(store, 0, 1, rewrite_head=True)  # partition 0 rolled back one event, the others as they were
    assert store.audit_head()[1] != signed.audit_hash


def test_a_partitioned_log_read_from_a_server_verifies_with_the_heads_it_sent(store: PostgresStore) -> None:
    from crossgate.cli.backend import LogSnapshot

    busy_log(store)
    upto, heads = store.audit_cut()
    events = store.list_events()
    sent = LogSnapshot(events, (upto, heads_root(heads)), None, [], [], heads)
    assert verify_log(sent).ok
    rolled_back = [(p, seq, digest) if p != 2 else (2, 0, "0" * 64) for p, seq, digest in heads]
    forged = LogSnapshot(events, (upto, heads_root(rolled_back)), None, [], [], rolled_back)
    assert not verify_log(forged).ok

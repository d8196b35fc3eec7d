"""PostgreSQL's group commit of request updates (``crossgate.stores._update_batch``): updates waiting for
the chain head share one transaction, and every compare-and-set, event and failure stays its own, with
two stores on one schema (two servers) and with standing-rule changes beside them (the other lock order)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import psycopg
import pytest

from crossgate import ReviewQueue, ToolCall
from crossgate.errors import ConflictError
from crossgate.model import ApprovalRequest, Approve, Event, NewEvent, RequestStatus
from crossgate.stores import RequestQuery, _update_batch
from crossgate.stores.postgres import PostgresStore
from tests.support.postgres import PostgresStoreFactory


@pytest.fixture
def pg_store(pg_factory: PostgresStoreFactory) -> Iterator[PostgresStore]:
    """One audit chain: every decision waits for the one head these tests hold."""
    store: PostgresStore = pg_factory(partitions=1)
    yield store
    store.close()


def _submit(queue: ReviewQueue, requests: int) -> list[str]:
    for n in range(requests):
        queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": f"T-{n}"}, run=f"run-{n % 3}"))
    pending = queue.list_requests(RequestQuery(statuses=(RequestStatus.PENDING,), limit=500)).items
    return [r.id for r in pending]


def _race(threads: int, work: Callable[[int], None], timeout: float = 60) -> None:
    start = threading.Barrier(threads)

    def run(i: int) -> None:
        start.wait()
        work(i)

    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=timeout)
    assert not any(worker.is_alive() for worker in workers), "a thread never finished: a deadlock or a lost wake-up"


def _batches(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch, failures: list[Exception] | None = None
) -> list[int]:
    """The size of each transaction of updates ``store`` commits from now on (and what any raised)."""
    sizes: list[int] = []
    together = store._update_together

    def counted(updates: Sequence[_update_batch.Update]) -> list[Event | None]:
        sizes.append(len(updates))
        try:
            return together(updates)
        except Exception as exc:
            if failures is not None:
                failures.append(exc)
            raise

    monkeypatch.setattr(store, "_update_together", counted)
    return sizes


def test_decisions_waiting_for_the_head_commit_in_one_transaction(
    pg_store: PostgresStore, pg_queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _submit(pg_queue, 10)
    sizes = _batches(pg_store, monkeypatch)
    holder = psycopg.connect(pg_store.url.split("?")[0], autocommit=False)
    holder.execute(f"SELECT seq FROM {pg_store.schema}.audit_head FOR UPDATE")  # another writer holds the head
    decided: list[str] = []
    threads = [
        threading.Thread(target=lambda r=request_id: decided.append(pg_queue.decide(r, Approve(), reviewer="r").id))
        for request_id in ids
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(pg_store._updates._waiting) < len(ids) - 1 and time.monotonic() < deadline:
        time.sleep(0.01)  # one leads (blocked on the head), the others wait behind it
    holder.rollback()
    holder.close()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(decided) == sorted(ids)
    assert sizes == [1, len(ids) - 1]
    assert all(pg_queue.get(request_id).status is RequestStatus.DECIDED for request_id in ids)
    decisions = [e for e in pg_queue.events() if e.kind == "decided"]
    assert sorted(str(e.request_id) for e in decisions) == sorted(ids)
    assert pg_queue.verify_audit().ok


def test_racing_updates_on_two_stores_change_each_request_exactly_once_without_deadlocks(
    pg_store: PostgresStore, pg_queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _submit(pg_queue, 20)
    pending = {request_id: pg_queue.get(request_id) for request_id in ids}
    other = PostgresStore(pg_store.url)  # a second server on the same schema, with its own queue of updates
    stores = [pg_store, other]
    failures: list[Exception] = []  # a deadlock PostgreSQL broke would show here (the batch is then retried)
    _batches(pg_store, monkeypatch, failures)
    _batches(other, monkeypatch, failures)
    won: dict[str, list[str]] = {request_id: [] for request_id in ids}
    lock = threading.Lock()

    def updater(i: int) -> None:
        # Each thread tries every request in its own order, through the store (no queue read first): the
        # batches of both stores hold several requests each, in every order.
        for request_id in random.Random(i).sample(ids, len(ids)):
            decided = pending[request_id].model_copy(update={"status": RequestStatus.DECIDED})
            event = NewEvent(kind="decided", request_id=request_id, actor=f"r{i}", channel="api", at=pg_queue.now())
            if stores[i % 2].update_request(decided, (RequestStatus.PENDING,), event) is not None:
                with lock:
                    won[request_id].append(f"r{i}")

    def rule_changes() -> None:
        # Standing-rule writes lock their row before the head, the other order: they must not deadlock.
        for _ in range(10):
            rule = pg_queue.add_rule(pg_queue.new_rule(effect="deny", tool="shell"), actor="admin")
            pg_queue.revoke_rule(rule.id, actor="admin")

    try:
        _race(13, lambda i: rule_changes() if i == 12 else updater(i))
    finally:
        other.close()
    assert failures == []
    assert all(len(winners) == 1 for winners in won.values())
    decided = {str(e.request_id): e.actor for e in pg_queue.events() if e.kind == "decided"}
    assert len([e for e in pg_queue.events() if e.kind == "decided"]) == len(ids)  # none doubled
    assert decided == {request_id: winners[0] for request_id, winners in won.items()}
    assert pg_queue.verify_audit().ok


def test_a_transaction_of_lost_races_changes_and_records_nothing(
    pg_store: PostgresStore, pg_queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    [request_id] = _submit(pg_queue, 1)
    stale = pg_queue.get(request_id)  # read while pending, as a reviewer about to lose the race does
    other = PostgresStore(pg_store.url)  # the winner is another server: this store has no hint of the move
    try:
        ReviewQueue(other).decide(request_id, Approve(), reviewer="first")
    finally:
        other.close()
    head = pg_store.audit_head()
    sizes = _batches(pg_store, monkeypatch)
    results = _late_decisions(pg_store, pg_queue, stale, 6)
    assert results == [None] * 6 and sum(sizes) == 6  # each reached a transaction, and each lost
    assert pg_store.audit_head() == head
    assert pg_queue.get(request_id).decision.reviewer == "first"  # type: ignore[union-attr]
    assert pg_queue.verify_audit().ok


def _late_decisions(store: PostgresStore, queue: ReviewQueue, stale: ApprovalRequest, n: int) -> list[Event | None]:
    """``n`` threads deciding ``stale`` (read while pending) at once, straight through the store."""
    results: list[Event | None] = []

    def late(i: int) -> None:
        decided = stale.model_copy(update={"status": RequestStatus.DECIDED})
        event = NewEvent(kind="decided", request_id=stale.id, actor=f"late-{i}", channel="api", at=queue.now())
        results.append(store.update_request(decided, (RequestStatus.PENDING,), event))

    _race(n, late)
    return results


def test_a_race_this_server_saw_lost_is_refused_by_a_read_without_a_transaction(
    pg_store: PostgresStore, pg_queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    [request_id] = _submit(pg_queue, 1)
    stale = pg_queue.get(request_id)
    pg_queue.decide(request_id, Approve(), reviewer="first")  # through this store: it remembers the move
    head = pg_store.audit_head()
    sizes = _batches(pg_store, monkeypatch)
    assert _late_decisions(pg_store, pg_queue, stale, 6) == [None] * 6
    assert sizes == []  # no transaction, so none waited for the chain head
    assert pg_store.audit_head() == head
    assert pg_queue.get(request_id).decision.reviewer == "first"  # type: ignore[union-attr]
    with pytest.raises(ConflictError):
        pg_queue.decide(request_id, Approve(), reviewer="second")
    assert pg_queue.verify_audit().ok


def test_the_hint_alone_never_refuses_a_change(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    [request_id] = _submit(pg_queue, 1)
    pg_store._moved.note(request_id, RequestStatus.DECIDED.value)  # a hint the database does not bear out
    pg_queue.decide(request_id, Approve(), reviewer="r")  # the committed status is read: pending, so it runs
    assert pg_queue.get(request_id).status is RequestStatus.DECIDED
    assert [e.kind for e in pg_queue.events(request_id=request_id)] == ["submitted", "decided"]
    assert pg_queue.verify_audit().ok


def test_updates_beyond_one_transactions_share_wait_for_the_next(
    pg_queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_update_batch, "MAX_UPDATES", 2)  # most updates wait beyond the first batch
    ids = _submit(pg_queue, 12)
    decided: Counter[str] = Counter()
    lock = threading.Lock()

    def reviewer(i: int) -> None:
        for request_id in ids[i % 3 :: 3]:
            try:
                pg_queue.decide(request_id, Approve(), reviewer=f"r{i}")
            except ConflictError:
                continue
            with lock:
                decided[request_id] += 1

    _race(12, reviewer, timeout=30)
    assert all(decided[request_id] == 1 for request_id in ids)
    assert pg_queue.verify_audit().ok

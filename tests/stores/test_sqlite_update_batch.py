"""SQLite's group commit of request updates (``crossgate.stores._update_batch``): racing reviewers and
appliers in one process share transactions, and every compare-and-set, event and failure stays its own."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from crossgate import ReviewQueue, ToolCall
from crossgate.errors import AlreadyAppliedError, ConflictError
from crossgate.model import Approve, RequestStatus
from crossgate.stores import RequestQuery, _update_batch
from crossgate.stores.sqlite import SqliteStore


def _queue(tmp_path: Path, requests: int) -> tuple[ReviewQueue, SqliteStore, list[str]]:
    store = SqliteStore(tmp_path / "cg.db")
    store.setup()
    queue = ReviewQueue(store)
    for n in range(requests):
        queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": f"T-{n}"}, run=f"run-{n % 3}"))
    pending = queue.list_requests(RequestQuery(statuses=(RequestStatus.PENDING,), limit=500)).items
    return queue, store, [r.id for r in pending]


def _race(threads: int, work: object) -> None:
    start = threading.Barrier(threads)

    def run(i: int) -> None:
        start.wait()
        work(i)  # type: ignore[operator]

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)


def test_racing_reviewers_decide_each_request_exactly_once_in_fewer_transactions(tmp_path: Path) -> None:
    queue, store, ids = _queue(tmp_path, 30)
    transactions: list[str] = []
    store._write_hook = lambda write, conn: transactions.append(write)
    outcomes: Counter[str] = Counter()
    won: dict[str, list[int]] = {request_id: [] for request_id in ids}
    lock = threading.Lock()

    def reviewer(i: int) -> None:
        for request_id in ids:  # every reviewer tries every request, in the same order: they collide
            try:
                queue.decide(request_id, Approve(), reviewer=f"r{i}")
            except ConflictError:
                with lock:
                    outcomes["conflict"] += 1
                continue
            with lock:
                outcomes["decided"] += 1
                won[request_id].append(i)

    _race(12, reviewer)
    assert outcomes["decided"] == len(ids)
    assert outcomes["conflict"] == 11 * len(ids)
    assert all(len(winners) == 1 for winners in won.values())
    decided = {str(e.request_id): e.actor for e in queue.events() if e.kind == "decided"}
    assert len([e for e in queue.events() if e.kind == "decided"]) == len(ids)  # one each, none doubled
    assert sorted(decided) == sorted(ids)
    for request_id, actor in decided.items():
        assert actor == f"r{won[request_id][0]}"
        decision = queue.get(request_id).decision
        assert decision is not None
        assert decision.reviewer == actor
    assert queue.verify_audit().ok
    assert transactions.count("update_request") <= len(ids)  # never more than one per decision


def test_racing_appliers_apply_each_decision_once(tmp_path: Path) -> None:
    queue, _store, ids = _queue(tmp_path, 20)
    for request_id in ids:
        queue.decide(request_id, Approve(), reviewer="r")
    applied: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    lock = threading.Lock()

    def applier(_i: int) -> None:
        for request_id in ids:
            try:
                queue.mark_applied(request_id, args=queue.get(request_id).approved_args())
            except AlreadyAppliedError:
                with lock:
                    refused[request_id] += 1
                continue
            with lock:
                applied[request_id] += 1

    _race(8, applier)
    assert all(applied[request_id] == 1 for request_id in ids)
    assert all(refused[request_id] == 7 for request_id in ids)
    assert queue.verify_audit().ok


def test_a_lost_race_is_refused_from_the_committed_status_not_the_hint_alone(tmp_path: Path) -> None:
    queue, store, ids = _queue(tmp_path, 1)
    request = queue.get(ids[0])
    store._moved.note(ids[0], RequestStatus.DECIDED.value)  # a hint the database does not bear out
    queue.decide(ids[0], Approve(), reviewer="r")  # the compare-and-set runs and succeeds
    assert queue.get(ids[0]).status is RequestStatus.DECIDED
    with pytest.raises(ConflictError):
        queue.decide(ids[0], Approve(), reviewer="s")
    assert request.status is RequestStatus.PENDING
    assert queue.verify_audit().ok


def test_updates_beyond_one_transactions_share_wait_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_update_batch, "MAX_UPDATES", 2)  # most updates wait beyond the first batch
    queue, _store, ids = _queue(tmp_path, 12)
    decided: Counter[str] = Counter()
    lock = threading.Lock()

    def reviewer(i: int) -> None:
        for request_id in ids[i % 3 :: 3]:
            try:
                queue.decide(request_id, Approve(), reviewer=f"r{i}")
            except ConflictError:
                continue
            with lock:
                decided[request_id] += 1

    finished = threading.Event()

    def everyone() -> None:
        _race(12, reviewer)
        finished.set()

    threading.Thread(target=everyone, daemon=True).start()
    assert finished.wait(30), "a thread whose update was beyond a batch never got it committed"
    assert all(decided[request_id] == 1 for request_id in ids)
    assert queue.verify_audit().ok

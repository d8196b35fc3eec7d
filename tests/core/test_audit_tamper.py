"""verify passes on a clean log and fails on a changed, deleted or reordered event (SQLite file and memory)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crossgate import Approve, MemoryStore, ReviewQueue, ToolCall
from crossgate.stores.sqlite import SqliteStore


def fill(queue: ReviewQueue) -> None:
    for ticket in ("t1", "t2", "t3"):
        submission = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}))
        assert submission.request is not None
        queue.decide(submission.request.id, Approve(), reviewer="ann")


@pytest.fixture
def sqlite_queue(tmp_path: Path) -> ReviewQueue:
    store = SqliteStore(tmp_path / "audit.db")
    store.setup()
    queue = ReviewQueue(store)
    fill(queue)
    assert queue.verify_audit().ok
    return queue


def tamper(queue: ReviewQueue, *statements: str) -> None:
    assert isinstance(queue.store, SqliteStore)
    with sqlite3.connect(queue.store.path) as db:
        for statement in statements:
            db.execute(statement)


def test_changed_payload_is_detected(sqlite_queue: ReviewQueue) -> None:
    tamper(sqlite_queue, "UPDATE events SET payload = replace(payload, 't2', 't9') WHERE seq = 3")
    report = sqlite_queue.verify_audit()
    assert not report.ok
    assert report.bad_seq == 3
    assert "changed" in (report.problem or "")


def test_changed_actor_is_detected(sqlite_queue: ReviewQueue) -> None:
    tamper(sqlite_queue, "UPDATE events SET actor = 'mallory' WHERE kind = 'decided' AND seq = 2")
    assert sqlite_queue.verify_audit().bad_seq == 2


def test_deleted_event_in_the_middle_is_detected(sqlite_queue: ReviewQueue) -> None:
    tamper(sqlite_queue, "DELETE FROM events WHERE seq = 4")
    report = sqlite_queue.verify_audit()
    assert not report.ok
    assert report.bad_seq == 5


def test_deleted_last_event_is_detected_by_the_separate_head(sqlite_queue: ReviewQueue) -> None:
    tamper(sqlite_queue, "DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)")
    report = sqlite_queue.verify_audit()
    assert not report.ok
    assert "head" in (report.problem or "")


def test_swapped_events_are_detected(sqlite_queue: ReviewQueue) -> None:
    tamper(
        sqlite_queue,
        "UPDATE events SET seq = -1 WHERE seq = 2",
        "UPDATE events SET seq = 2 WHERE seq = 3",
        "UPDATE events SET seq = 3 WHERE seq = -1",
    )
    report = sqlite_queue.verify_audit()
    assert not report.ok
    assert report.bad_seq == 2


def test_recomputed_single_hash_still_breaks_the_chain(sqlite_queue: ReviewQueue) -> None:
    import hashlib

    events = sqlite_queue.events()
    forged = events[2].model_copy(update={"payload": {**events[2].payload, "tool": "delete_everything"}})
    digest = hashlib.sha256(forged.chained_text().encode()).hexdigest()
    tamper(
        sqlite_queue,
        f"UPDATE events SET payload = json_set(payload, '$.tool', 'delete_everything'), "
        f"hash = '{digest}' WHERE seq = 3",
    )
    report = sqlite_queue.verify_audit()
    assert not report.ok
    assert report.bad_seq == 4


def test_memory_store_tampering_is_detected() -> None:
    store = MemoryStore()
    queue = ReviewQueue(store)
    fill(queue)
    assert queue.verify_audit().ok
    events = store._events
    events[1] = events[1].model_copy(update={"actor": "mallory"})
    assert queue.verify_audit().bad_seq == 2

"""Group commit of the audit log: allow and deny records are enqueued, and committed in order.

Each test reads the file through a plain sqlite3 connection of its own, which sees only what is
committed (no flush of the store's queue), so "committed" here means "on disk for every other process".
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from crossgate import Approve, Policy, PolicyRule, ReviewQueue, StoreError, ToolCall, VerdictKind, open_store
from crossgate.audit import verify_chain
from crossgate.stores.sqlite import SqliteStore
from tests.support.postgres import database_url

POLICY = Policy(
    rules=(
        PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_ticket"),
        PolicyRule(name="no-shell", verdict=VerdictKind.DENY, tool="shell", reason="no shell"),
        PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),
    )
)


def call(tool: str, ticket: str = "t1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool=tool, args={"id": ticket}, run="r1")


def committed(path: Path) -> list[str]:
    """The kinds of the events committed to the file, in chain order."""
    with sqlite3.connect(path) as conn:
        return [kind for (kind,) in conn.execute("SELECT kind FROM events ORDER BY seq")]


def queue_on(path: Path) -> ReviewQueue:
    store = SqliteStore(path)
    store.setup()
    return ReviewQueue(store, POLICY)


def test_allow_and_deny_records_are_committed_before_the_next_state_change_in_its_transaction(tmp_path: Path) -> None:
    queue = queue_on(tmp_path / "q.db")
    queue.submit(call("read_ticket"))
    queue.submit(call("shell"))
    request = queue.submit(call("delete_ticket")).request
    assert request is not None
    # Once submit returns, the pause is committed, and the two records before it with it, in order.
    assert committed(tmp_path / "q.db")[:3] == ["auto_allowed", "auto_denied", "submitted"]
    queue.submit(call("read_ticket", "t2"))
    queue.decide(request.id, Approve(), reviewer="ann")
    assert committed(tmp_path / "q.db")[3:] == ["auto_allowed", "decided"]
    events = queue.events()
    assert verify_chain(events, head=queue.store.audit_head()).ok
    queue.close()


def test_the_background_writer_commits_enqueued_records_without_any_other_write(tmp_path: Path) -> None:
    queue = queue_on(tmp_path / "q.db")
    for ticket in ("t1", "t2", "t3"):
        queue.submit(call("read_ticket", ticket))
    queue.record_outcome(None, ran=True, result="ok", call=call("read_ticket", "t3"))
    deadline = time.monotonic() + 10
    while committed(tmp_path / "q.db") != ["auto_allowed"] * 3 + ["ran"]:
        assert time.monotonic() < deadline, committed(tmp_path / "q.db")
        time.sleep(0.01)
    assert queue.verify_audit().ok
    queue.close()


def test_close_commits_what_is_enqueued(tmp_path: Path) -> None:
    queue = queue_on(tmp_path / "q.db")
    queue.submit(call("read_ticket"))
    queue.submit(call("shell"))
    queue.close()
    assert committed(tmp_path / "q.db") == ["auto_allowed", "auto_denied"]
    reopened = queue_on(tmp_path / "q.db")
    assert reopened.verify_audit().ok
    reopened.close()


def test_a_batch_is_one_link_of_the_chain_and_the_head_moves_to_its_last_event(tmp_path: Path) -> None:
    queue = queue_on(tmp_path / "q.db")
    store = queue.store
    assert isinstance(store, SqliteStore)
    writes: list[str] = []
    store._write_hook = lambda write, conn: writes.append(write)
    for i in range(20):
        queue.submit(call("read_ticket", f"t{i}"))
    store.flush_events()
    events = queue.events()
    assert [e.seq for e in events] == list(range(1, 21))
    assert store.audit_head() == (20, events[-1].hash)
    assert verify_chain(events, head=store.audit_head()).ok
    assert len(writes) < 20, "the records were committed in batches, not one transaction each"
    queue.close()


def test_a_failed_flush_keeps_the_records_fails_the_next_call_closed_and_commits_them_once_healed(
    tmp_path: Path,
) -> None:
    queue = queue_on(tmp_path / "q.db")
    store = queue.store
    assert isinstance(store, SqliteStore)
    broken = [True]

    def disk_full(write: str, conn: sqlite3.Connection) -> None:
        if broken[0]:
            raise sqlite3.OperationalError("database or disk is full")

    store._write_hook = disk_full
    queue.submit(call("read_ticket", "t1"))
    with pytest.raises(StoreError, match="disk is full"):
        store.flush_events()
    refused = submit_until_refused(queue, call("read_ticket", "t2"))  # the writer fails too, by then
    assert "audit log could not be written" in str(refused) and "disk is full" in str(refused)
    assert committed(tmp_path / "q.db") == []
    broken[0] = False
    store.flush_events()
    kinds = committed(tmp_path / "q.db")
    assert kinds[0] == "auto_allowed" and set(kinds) == {"auto_allowed"}
    assert next(e.payload["args"] for e in queue.events()) == {"id": "t1"}, "nothing lost, first still first"
    assert len({e.hash for e in queue.events()}) == len(kinds), "nothing doubled"
    queue.submit(call("read_ticket", "t9"))  # healed: calls are recorded again
    assert queue.verify_audit().ok
    queue.close()


def submit_until_refused(queue: ReviewQueue, allowed: ToolCall) -> StoreError:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            queue.submit(allowed)
        except StoreError as exc:
            return exc
        time.sleep(0.02)
    raise AssertionError("an allowed call was still recorded 10 s after the writer's flush failed")


def test_a_reviewer_in_another_process_sees_the_records_before_the_pause_they_preceded(tmp_path: Path) -> None:
    agent = queue_on(tmp_path / "q.db")
    reviewer = queue_on(tmp_path / "q.db")  # another store object: shares no queue of events with the agent's
    agent.submit(call("read_ticket"))
    request = agent.submit(call("delete_ticket")).request
    assert request is not None
    assert [e.kind for e in reviewer.events()] == ["auto_allowed", "submitted"]
    reviewer.decide(request.id, Approve(), reviewer="ann")
    assert agent.get(request.id).decision is not None
    agent.close()
    reviewer.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_commits_its_own_records_and_not_its_parents_twice(tmp_path: Path) -> None:
    queue = queue_on(tmp_path / "q.db")
    queue.submit(call("read_ticket", "parent"))  # still waiting for the writer as the process forks
    pid = os.fork()
    if pid == 0:  # the child, with the queue it inherited: its own record, committed by its own flush
        try:
            queue.submit(call("read_ticket", "child"))
            queue.store.flush_events()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    queue.close()
    events = queue_on(tmp_path / "q.db").events()
    assert sorted(e.payload["args"]["id"] for e in events) == ["child", "parent"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_on_every_database_records_precede_the_change_after_them_and_another_store_sees_them(
    tmp_path: Path, kind: str
) -> None:
    with database_url(kind, tmp_path) as url:
        agent, reviewer = ReviewQueue(open_store(url), POLICY), ReviewQueue(open_store(url), POLICY)
        agent.submit(call("read_ticket"))
        agent.submit(call("shell"))
        request = agent.submit(call("delete_ticket")).request
        assert request is not None
        assert [e.kind for e in reviewer.events()] == ["auto_allowed", "auto_denied", "submitted"]
        agent.record_outcome(None, ran=True, result="ok", call=call("read_ticket"))
        reviewer.decide(request.id, Approve(), reviewer="ann")
        agent.mark_applied(request.id, args={"id": "t1"})
        kinds = [e.kind for e in reviewer.events()]
        # The outcome waits in the agent's process (the reviewer's decision may come before or after it in
        # the chain), but never after the agent's own next change, the applied mark.
        assert kinds[:3] == ["auto_allowed", "auto_denied", "submitted"] and kinds[-1] == "applied"
        assert sorted(kinds[3:5]) == ["decided", "ran"]
        assert reviewer.verify_audit().ok
        agent.close()
        reviewer.close()

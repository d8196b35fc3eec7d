"""SqliteStore durability: which ``PRAGMA synchronous`` each write commits with, URL parsing, and crash safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crossgate import Approve, Policy, PolicyRule, RequestStatus, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.errors import ConfigurationError
from crossgate.model import ParkedRunStatus
from crossgate.policy.versions import apply_policy
from crossgate.stores.sqlite import SqliteStore
from tests.core.sqlite_levels import FULL, NORMAL, commit_levels

AUTHORITY = Authority.generate()  # the queue signs checkpoints: their writes are in the table too
WRITES = (
    "setup",
    "append_event",
    "insert_request",
    "update_request",
    "insert_rule",
    "revoke_rule",
    "insert_parked_run",
    "change_parked_run",
    "append_outcome",
    "insert_policy_version",
    "insert_checkpoint",
    "put_state_head",
)
# Written out by hand (not taken from the store) so a change to the store's table shows up here.
EXPECTED = {
    "full": {
        **dict.fromkeys(WRITES, FULL),
        "change_parked_run": NORMAL,
        "append_outcome": NORMAL,
        "put_state_head": NORMAL,
    },
    "normal": dict.fromkeys(WRITES, NORMAL),
    "decisions": {
        **dict.fromkeys(WRITES, NORMAL),
        "setup": FULL,
        "update_request": FULL,
        "revoke_rule": FULL,
        "insert_policy_version": FULL,
        "insert_checkpoint": FULL,
    },
}
POLICY = Policy(
    rules=(
        PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_ticket"),
        PolicyRule(name="slow", verdict=VerdictKind.ASK, tool="close_ticket", timeout_seconds=60),
    )
)


def call(tool: str, ticket: str, run: str = "r1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool=tool, args={"id": ticket}, run=run)


def observed_levels(
    store: SqliteStore, then: Callable[[str, sqlite3.Connection], None] | None = None
) -> list[tuple[str, int]]:
    """Record, from inside each write transaction, the write's name and the ``synchronous`` level in force."""
    seen: list[tuple[str, int]] = []

    def hook(write: str, conn: sqlite3.Connection) -> None:
        assert conn.in_transaction
        seen.append((write, conn.execute("PRAGMA synchronous").fetchone()[0]))
        if then is not None:
            then(write, conn)

    store._write_hook = hook
    return seen


def clocked_queue(store: SqliteStore) -> tuple[ReviewQueue, list[datetime]]:
    now = [datetime(2026, 11, 30, 5, 0, tzinfo=UTC)]
    return ReviewQueue(store, POLICY, clock=lambda: now[0], authority=AUTHORITY), now


def every_kind_of_write(queue: ReviewQueue, now: list[datetime]) -> None:
    """One of each store write, through the queue, in an order that switches the level back and forth."""
    apply_policy(queue.store, AUTHORITY, POLICY, created_by="ops", clock=queue.now)  # and its checkpoint
    queue.submit(call("read_ticket", "t1"))  # allowed: a bare event, enqueued
    queue.store.flush_events()  # committed now (else the next write commits it in its own transaction)
    request = queue.submit(call("delete_ticket", "t3")).request
    assert request is not None
    parked = queue.park(framework="openai-agents", run="r1", request_ids=[request.id], state="{}")
    queue.decide(request.id, Approve(), reviewer="alice")
    claimed = queue.claim_parked(parked.id, owner="worker")
    queue.mark_applied(request.id, args={"id": "t3"})
    queue.record_outcome(request.id, ran=True, result="deleted")
    queue.finish_parked(claimed.id, owner="worker", status=ParkedRunStatus.RESUMED)
    rule = queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="list_*"), actor="alice")
    queue.revoke_rule(rule.id, actor="alice")
    cancelled = queue.submit(call("delete_ticket", "t4")).request
    assert cancelled is not None
    queue.cancel(cancelled.id)
    overdue = queue.submit(call("close_ticket", "t5")).request
    assert overdue is not None
    now[0] += timedelta(minutes=5)
    assert [r.id for r in queue.expire_overdue()] == [overdue.id]
    assert queue.verify_audit()


def run_every_kind_of_write(store: SqliteStore) -> None:
    queue, now = clocked_queue(store)
    try:
        every_kind_of_write(queue, now)
    finally:
        queue.close()


@pytest.mark.parametrize("durability", ["full", "decisions", "normal"])
def test_each_write_commits_with_the_level_its_durability_names(tmp_path: Path, durability: str) -> None:
    store = SqliteStore(tmp_path / "q.db", durability=durability)  # type: ignore[arg-type]
    seen = observed_levels(store)
    store.setup()
    run_every_kind_of_write(store)
    assert {write for write, _ in seen} == set(WRITES)
    wrong = [(write, level) for write, level in seen if level != EXPECTED[durability][write]]
    assert wrong == []
    assert store.sync_level("update_request") == EXPECTED[durability]["update_request"]


def test_update_request_is_full_for_decide_apply_cancel_and_expire_under_decisions(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db", durability="decisions")
    seen = observed_levels(store)
    store.setup()
    run_every_kind_of_write(store)
    updates = [level for write, level in seen if write == "update_request"]
    assert updates == [FULL] * 4  # decided, applied, cancelled, expired
    assert [level for write, level in seen if write == "insert_request"] == [NORMAL] * 3


def test_each_thread_connection_gets_the_level_of_each_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db", durability="decisions")
    store.setup()  # this thread's connection, left at FULL
    seen = observed_levels(store)
    queue, now = clocked_queue(store)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            every_kind_of_write(queue, now)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=30)
    queue.close()
    assert errors == []
    assert {write for write, _ in seen} == set(WRITES) - {"setup"}
    assert all(level == EXPECTED["decisions"][write] for write, level in seen)


def test_a_plain_connection_outside_a_write_keeps_the_last_level(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db", durability="decisions")
    store.setup()  # FULL
    queue = ReviewQueue(store)
    request = queue.submit(call("delete_ticket", "t1")).request  # NORMAL
    assert request is not None
    assert store._conn().execute("PRAGMA synchronous").fetchone()[0] == NORMAL
    queue.decide(request.id, Approve(), reviewer="alice")  # FULL
    assert store._conn().execute("PRAGMA synchronous").fetchone()[0] == FULL
    queue.close()


# which events commit FULL under `full` ----------------------------------------------------------------
# Every kind an invariant depends on, or a reviewer or operator is told about as done (written out by hand).
MUST_BE_FULL = {
    "policy_applied",
    "auto_allowed",
    "submitted",
    "run_parked",
    "decided",
    "applied",
    "rule_added",
    "rule_revoked",
    "cancelled",
    "expired",
}
MAY_BE_NORMAL = {"run_claimed", "ran", "run_resumed"}


def test_under_full_only_claims_finishes_and_reviewed_outcomes_commit_normal(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    store.setup()
    levels = commit_levels(store)
    run_every_kind_of_write(store)
    by_kind = levels()
    assert set(by_kind) == MUST_BE_FULL | MAY_BE_NORMAL
    assert {kind for kind in MUST_BE_FULL if by_kind[kind] != {FULL}} == set()
    assert {kind for kind in MAY_BE_NORMAL if by_kind[kind] != {NORMAL}} == set()


def test_under_full_a_claim_that_carries_enqueued_records_commits_full(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    store.setup()
    queue, _ = clocked_queue(store)
    request = queue.submit(call("delete_ticket", "t1")).request
    assert request is not None
    parked = queue.park(framework="openai-agents", run="r1", request_ids=[request.id], state="{}")
    queue.decide(request.id, Approve(), reviewer="alice")
    levels = commit_levels(store)
    seen = observed_levels(store, then=store._write_hook)
    queue.submit(call("read_ticket", "t2"))  # an allowed call's record, enqueued
    queue.claim_parked(parked.id, owner="worker")  # takes it into its transaction
    queue.finish_parked(parked.id, owner="worker")
    assert seen == [("change_parked_run", FULL), ("change_parked_run", NORMAL)]
    assert levels()["auto_allowed"] == {FULL}
    queue.close()


def test_under_full_the_light_writes_are_exactly_claims_finishes_retries_prunes_outcomes_and_heads() -> None:
    store = SqliteStore("unused.db")
    light = {w for w in (*WRITES, "change_parked_runs", "claim_delivery_cursor") if store.sync_level(w) == NORMAL}
    assert light == {"change_parked_run", "change_parked_runs", "append_outcome", "put_state_head"}
    assert store.sync_level("change_parked_run", carries_enqueued=True) == FULL
    assert store.sync_level("put_state_head", carries_enqueued=True) == FULL
    assert SqliteStore("unused.db", durability="normal").sync_level("append_outcome", carries_enqueued=True) == NORMAL


# URLs and paths -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "name", "durability"),
    [
        ("q.db", "q.db", "full"),
        ("sqlite:///{dir}/q.db", "q.db", "full"),
        ("sqlite:///{dir}/q.db?durability=decisions", "q.db", "decisions"),
        ("sqlite:///{dir}/q.db?durability=normal", "q.db", "normal"),
        ("sqlite:///{dir}/q.db?durability=full", "q.db", "full"),
        ("{dir}/q.db?durability=decisions", "q.db", "decisions"),
        ("{dir}/we?ird.db", "we?ird.db", "full"),
    ],
)
def test_open_store_reads_the_durability_from_the_url_or_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, name: str, durability: str
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store(target.format(dir=tmp_path))
    try:
        assert isinstance(store, SqliteStore)
        assert store.durability == durability
        assert store.path.resolve() == (tmp_path / name).resolve()
        assert (tmp_path / name).exists()
        assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == [name]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("sqlite:///{dir}/q.db?durability=sometimes", "unknown SQLite durability 'sometimes'"),
        ("sqlite:///{dir}/q.db?durability=FULL", "unknown SQLite durability 'FULL'"),
        ("sqlite:///{dir}/q.db?durability=", "unknown SQLite durability ''"),
        ("{dir}/q.db?durability=off", "unknown SQLite durability 'off'"),
        ("sqlite:///{dir}/q.db?synchronous=normal", "unknown SQLite parameter 'synchronous'"),
        ("sqlite:///{dir}/q.db?durability=full&durability=normal", "durability is given twice"),
        ("sqlite:///{dir}/q.db?durability", "cannot read the query"),
        ("sqlite:///?durability=normal", "no SQLite path"),
    ],
)
def test_a_bad_durability_or_parameter_is_a_configuration_error_and_creates_nothing(
    tmp_path: Path, target: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("?", r"\?")):
        open_store(target.format(dir=tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_durability_keyword_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="expected one of full, decisions, normal"):
        SqliteStore(tmp_path / "q.db", durability="eventually")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


# process crashes -----------------------------------------------------------------------------------
WRITER = """
import sys
from crossgate import Approve, ReviewQueue, ToolCall
from crossgate.stores.sqlite import SqliteStore

store = SqliteStore(sys.argv[1], durability=sys.argv[2])
store.setup()
queue = ReviewQueue(store)
i = 0
while True:
    request = queue.submit(ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": f"t{i}"})).request
    print("submitted", request.id, flush=True)
    if i % 2 == 0:
        queue.decide(request.id, Approve(), reviewer="alice")
        print("decided", request.id, flush=True)
        queue.mark_applied(request.id, args={"id": f"t{i}"})
        print("applied", request.id, flush=True)
    i += 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["full", "decisions", "normal"])
def test_sigkill_loses_nothing_the_store_reported_committed(tmp_path: Path, durability: str) -> None:
    db = tmp_path / "q.db"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), durability], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    reported: dict[str, str] = {}
    assert child.stdout is not None
    deadline = time.monotonic() + 30
    try:
        while len(reported) < 40 and time.monotonic() < deadline:
            kind, request_id = child.stdout.readline().split()
            reported[request_id] = kind
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert len(reported) >= 40

    queue = ReviewQueue(open_store(f"sqlite:///{db}?durability={durability}"))
    try:
        rank = {RequestStatus.PENDING: 0, RequestStatus.DECIDED: 1, RequestStatus.APPLIED: 2}
        reported_rank = {"submitted": 0, "decided": 1, "applied": 2}
        for request_id, kind in reported.items():
            # The child may have committed one step more than it printed before the kill, never one fewer.
            assert rank[queue.get(request_id).status] >= reported_rank[kind], (request_id, kind)
        assert queue.verify_audit()
    finally:
        queue.close()

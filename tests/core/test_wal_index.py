"""The WAL-index watch: the rules version is read again after any commit, and only then."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, StoreError, ToolCall, VerdictKind, open_store
from crossgate.stores._wal_index import WalIndexWatch
from crossgate.stores.sqlite import SqliteStore


def _wal_database(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x INTEGER)")
    return conn


def test_the_mark_holds_until_any_connection_commits(tmp_path: Path) -> None:
    conn = _wal_database(tmp_path / "db")
    watch = WalIndexWatch(tmp_path / "db")
    before = watch.mark()
    assert before is not None
    assert watch.mark() == before
    other = sqlite3.connect(tmp_path / "db", isolation_level=None)
    other.execute("INSERT INTO t VALUES (1)")
    after = watch.mark()
    assert after is not None and after != before
    conn.execute("INSERT INTO t VALUES (2)")
    assert watch.mark() != after
    other.close()
    conn.close()
    watch.close()


def test_no_wal_index_gives_no_mark(tmp_path: Path) -> None:
    assert WalIndexWatch(tmp_path / "missing.db").mark() is None
    (tmp_path / "short.db-shm").write_bytes(b"\0" * 10)
    assert WalIndexWatch(tmp_path / "short.db").mark() is None
    (tmp_path / "zero.db-shm").write_bytes(b"\0" * 4096)  # not a WAL index: the version does not match
    assert WalIndexWatch(tmp_path / "zero.db").mark() is None


def test_a_replaced_wal_index_file_is_mapped_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("crossgate.stores._wal_index.RECHECK_SECONDS", 0.0)
    conn = _wal_database(tmp_path / "db")
    watch = WalIndexWatch(tmp_path / "db")
    assert watch.mark() is not None
    shm = tmp_path / "db-shm"
    replacement = tmp_path / "other-shm"
    replacement.write_bytes(b"\0" * 4096)
    os.replace(replacement, shm)  # a file that is not a WAL index now: no mark, never the old one's
    assert watch.mark() is None
    conn.close()
    watch.close()


def _call() -> ToolCall:
    return ToolCall(framework="test", tool="delete_ticket", args={"id": "t3"}, call_id="c1")


def test_evaluate_reads_the_rules_version_only_after_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), Policy(default=VerdictKind.ALLOW))
    store = queue.store
    assert isinstance(store, SqliteStore)
    reads: list[str] = []
    original = store._read

    def counting(sql: str, params: object = ()) -> object:
        reads.append(sql)
        return original(sql, params)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_read", counting)
    queue.evaluate(_call())
    queue.evaluate(_call())
    version_reads = [sql for sql in reads if "rules_version" in sql]
    assert len(version_reads) == 1  # the second evaluation asks the WAL index, not SQLite

    other = ReviewQueue(open_store(str(tmp_path / "q.db")))
    rule = other.add_rule(other.new_rule(effect=VerdictKind.DENY, tool="delete_ticket", message="never"))
    verdict = queue.evaluate(_call())
    assert verdict.kind is VerdictKind.DENY and verdict.rule == rule.id
    other.revoke_rule(rule.id, actor="admin")
    assert queue.evaluate(_call()).kind is VerdictKind.ALLOW
    other.close()
    queue.close()


def test_a_rule_row_written_behind_the_queues_back_is_seen_at_the_next_call(tmp_path: Path) -> None:
    """The attacker's view: a raw SQL write (no crossgate code) still moves the WAL index, so a bumped
    rules version is read again; what the queue then makes of the rule is the authority's business."""
    path = tmp_path / "q.db"
    policy = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))
    queue = ReviewQueue(open_store(str(path)), policy)
    store = queue.store
    assert isinstance(store, SqliteStore)
    first = store.rules_version()
    assert store.rules_version() == first
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE rules_version SET version = version + 7 WHERE one = 1")
    raw.close()
    assert store.rules_version() == first + 7
    queue.close()


def test_a_closed_store_refuses_rather_than_answer_from_the_mark(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    store.setup()
    store.rules_version()
    store.rules_version()
    store.close()
    with pytest.raises(StoreError):
        store.rules_version()

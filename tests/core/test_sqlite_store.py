"""SQLite specifics beyond the store conformance suite: files, pragmas, migrations."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crossgate import ParkedRunStatus, ReviewQueue, StoreError
from crossgate.model import ParkedRun
from crossgate.stores.sqlite import SqliteStore, _statements, migrations


def test_an_uncreatable_folder_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create"):
        SqliteStore(blocker / "sub" / "q.db").setup()


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not a database " * 100)
    with pytest.raises(StoreError):
        SqliteStore(path).setup()


def test_setup_applies_every_migration_once_and_is_idempotent(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    store.setup()
    store.setup()
    latest = migrations()[-1].version
    assert store.schema_version() == latest
    with sqlite3.connect(tmp_path / "q.db") as db:
        assert db.execute("SELECT count(*) FROM schema_version").fetchone()[0] == len(migrations())
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_migrations_are_numbered_without_gaps() -> None:
    versions = [m.version for m in migrations()]
    assert versions == list(range(1, len(versions) + 1))


def test_migration_2_moves_the_state_of_existing_parked_runs_to_their_own_table(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    now = datetime(2026, 11, 30, tzinfo=UTC)
    old = ParkedRun(
        id="park_old",
        framework="openai-agents",
        run="r1",
        request_ids=("req_1",),
        state='{"big": "state"}',
        created_at=now,
        updated_at=now,
    )
    with sqlite3.connect(path) as db:  # a database written by version 1
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for statement in _statements(migrations()[0][1]):
            db.execute(statement)
        db.execute("INSERT INTO schema_version (version) VALUES (1)")
        db.execute(
            "INSERT INTO parked_runs (id, status, framework, run, body) VALUES (?, ?, ?, ?, ?)",
            (old.id, old.status.value, old.framework, old.run, old.model_dump_json()),
        )
    store = SqliteStore(path)
    store.setup()
    assert store.get_parked_run("park_old") == old
    assert store.list_parked_runs() == [old]
    store.close()


def test_claims_and_finishes_rewrite_the_parked_row_but_never_the_state(tmp_path: Path) -> None:
    queue = ReviewQueue(SqliteStore(tmp_path / "q.db"))
    queue.store.setup()
    state = "x" * 20_000
    parked = queue.park(framework="openai-agents", run="r1", request_ids=[], state=state)
    claimed = queue.claim_parked(parked.id, owner="w1")
    finished = queue.finish_parked(parked.id, owner="w1", outcome="done")
    assert (claimed.state, finished.state, queue.get_parked(parked.id).state) == (state, state, state)
    assert finished.status is ParkedRunStatus.RESUMED
    with sqlite3.connect(tmp_path / "q.db") as db:
        (body,) = db.execute("SELECT body FROM parked_runs WHERE id = ?", (parked.id,)).fetchone()
        (stored,) = db.execute("SELECT state FROM parked_states WHERE id = ?", (parked.id,)).fetchone()
    assert len(body) < 1_000
    assert stored == state
    queue.close()

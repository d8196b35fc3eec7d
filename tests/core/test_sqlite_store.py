"""SQLite specifics beyond the store conformance suite: files, pragmas, migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crossgate import StoreError
from crossgate.stores.sqlite import SqliteStore, migrations


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
    latest = migrations()[-1][0]
    assert store.schema_version() == latest
    with sqlite3.connect(tmp_path / "q.db") as db:
        assert db.execute("SELECT count(*) FROM schema_version").fetchone()[0] == len(migrations())
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_migrations_are_numbered_without_gaps() -> None:
    versions = [version for version, _ in migrations()]
    assert versions == list(range(1, len(versions) + 1))

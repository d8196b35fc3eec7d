"""The one migration loader and runner both SQL stores use (``crossgate.stores.migrations``).

New migrations are just new numbered files: the loader picks up every ``<number>_<name>.sql`` of the
folder in number order, whatever the number's width, and refuses a gap or a number used twice. A
SQLite database upgraded one release at a time ends up with the schema of one set up at once.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crossgate import ConfigurationError
from crossgate.stores.migrations import Migration, load_migrations, run_migrations
from crossgate.stores.sqlite import SqliteStore, _statements, migrations, register_functions


def folder(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).write_text(f"-- {name}\n", encoding="utf-8")
    return tmp_path


def test_every_numbered_file_is_picked_up_in_number_order(tmp_path: Path) -> None:
    found = load_migrations(
        folder(
            tmp_path,
            "0010_ten.sql",
            "0002_two.sql",
            "0001_one.sql",
            *[f"{n:04d}_m{n}.sql" for n in range(3, 10)],
            "README.md",
            "0011_draft.sql.orig",
        ),
        "SQLite",
    )
    assert [m.version for m in found] == list(range(1, 11))  # 10 after 9: by number, not by name
    assert (found[0].name, found[0].text) == ("one", "-- 0001_one.sql\n")
    assert found[0][:2] == (1, "-- 0001_one.sql\n")  # (version, text), as SQLite listed them before


def test_the_number_width_is_the_backends_own(tmp_path: Path) -> None:
    assert [m.name for m in load_migrations(folder(tmp_path, "001_a.sql", "002_b.sql"), "PostgreSQL")] == ["a", "b"]


@pytest.mark.parametrize(
    ("names", "shown"),
    [
        (("0001_one.sql", "0003_three.sql"), "[1, 3]"),
        (("0001_one.sql", "0002_two.sql", "0002_also_two.sql"), "[1, 2, 2]"),
        ((), "[]"),
    ],
    ids=["gap", "twice", "none"],
)
def test_a_gap_a_number_used_twice_or_no_migration_is_refused(
    tmp_path: Path, names: tuple[str, ...], shown: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_migrations(folder(tmp_path, *names), "SQLite")
    assert str(refused.value) == f"SQLite migrations are not numbered 1..n: {shown}"


def test_the_runner_applies_only_what_is_missing_in_order_and_records_each() -> None:
    known = tuple(Migration(n, f"sql {n}", f"m{n}") for n in (1, 2, 3, 4))
    done: list[str] = []
    ran = run_migrations(
        {1, 2},
        known,
        apply=lambda m: done.append(f"apply {m.version}"),
        record=lambda m: done.append(f"record {m.version}"),
    )
    assert [m.version for m in ran] == [3, 4]
    assert done == ["apply 3", "record 3", "apply 4", "record 4"]
    assert run_migrations({1, 2, 3, 4}, known, apply=lambda m: done.append("again"), record=print) == []
    assert done == ["apply 3", "record 3", "apply 4", "record 4"]


def test_a_fresh_database_is_built_at_once_and_every_version_recorded() -> None:
    known = tuple(Migration(n, f"sql {n}", f"m{n}") for n in (1, 2, 3))
    done: list[str] = []
    run_migrations(
        set(),
        known,
        apply=lambda m: done.append(f"apply {m.version}"),
        record=lambda m: done.append(f"record {m.version}"),
        fresh=lambda: done.append("fresh"),
    )
    assert done == ["fresh", "record 1", "record 2", "record 3"]


def test_a_database_newer_than_the_code_is_refused_before_anything_runs() -> None:
    done: list[Migration] = []
    with pytest.raises(ConfigurationError, match="schema version 5 is newer than this crossgate \\(2\\)"):
        run_migrations({1, 2, 5}, (Migration(1, "", "a"), Migration(2, "", "b")), apply=done.append, record=done.append)
    assert done == []


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as db:
        return db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1, 2"
        ).fetchall()


def test_sqlite_upgraded_one_release_at_a_time_equals_one_set_up_at_once(tmp_path: Path) -> None:
    at_once = SqliteStore(tmp_path / "at-once.db")
    at_once.setup()
    at_once.close()
    path = tmp_path / "stepwise.db"
    known = migrations()
    with sqlite3.connect(path, isolation_level=None) as db:
        register_functions(db)

        def apply(migration: Migration) -> None:
            for statement in _statements(migration.text):
                db.execute(statement)

        def record(migration: Migration) -> None:
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (migration.version,))

        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for upto in range(1, len(known)):  # every release but the last, each on the one before
            applied = {v for (v,) in db.execute("SELECT version FROM schema_version")}
            run_migrations(applied, known[:upto], apply=apply, record=record)
    stepwise = SqliteStore(path)
    stepwise.setup()  # the last migration, as the store's own setup applies it
    assert stepwise.schema_version() == known[-1].version
    stepwise.close()
    assert schema_of(path) == schema_of(tmp_path / "at-once.db")

"""Schema: a fresh schema equals the migrated one, setup is idempotent and safe to race, SQL ships in the wheel."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crossgate import ConfigurationError, open_store
from crossgate.stores.migrations import Migration, run_migrations
from crossgate.stores.postgres import PostgresStore, fresh_schema_sql, migrations
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]

CATALOG = {
    "columns": """
        SELECT table_name, column_name, data_type, is_nullable, column_default
        FROM information_schema.columns WHERE table_schema = %(s)s ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, replace(indexdef, %(s)s || '.', '') FROM pg_indexes
        WHERE schemaname = %(s)s ORDER BY 1, 2""",
    "constraints": """
        SELECT rel.relname, con.conname, pg_get_constraintdef(con.oid) FROM pg_constraint con
        JOIN pg_class rel ON rel.oid = con.conrelid JOIN pg_namespace ns ON ns.oid = rel.relnamespace
        WHERE ns.nspname = %(s)s ORDER BY 1, 2""",
    "functions": """
        SELECT p.proname, replace(pg_get_functiondef(p.oid), %(s)s || '.', '') FROM pg_proc p
        JOIN pg_namespace ns ON ns.oid = p.pronamespace WHERE ns.nspname = %(s)s ORDER BY 1""",
    "head": "SELECT seq, hash FROM {schema}.audit_head",
    "versions": "SELECT version, name FROM {schema}.schema_version ORDER BY version",
}


def catalog(url: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Everything about a schema's shape that a migration could get wrong."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {
            name: conn.execute(sql.SQL(text).format(schema=sql.Identifier(schema)), {"s": schema}).fetchall()  # type: ignore[arg-type]
            for name, text in CATALOG.items()
        }


def migrate_step_by_step(url: str, schema: str) -> None:
    """Build a schema the way a long-lived database got it: each migration, one setup at a time."""
    store = PostgresStore(url, schema=schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        first = migrations()[0]
        conn.execute(first.text)
        conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", (first.version, first.name))
    store.setup()  # applies 002.. on top, as an upgrade would
    store.close()


def test_fresh_schema_equals_the_fully_migrated_one(pg_factory: PostgresStoreFactory) -> None:
    fresh = pg_factory.new_schema()
    PostgresStore(pg_factory.url, schema=fresh).setup()
    migrated = pg_factory.new_schema()
    migrate_step_by_step(pg_factory.url, migrated)
    assert catalog(pg_factory.url, fresh) == catalog(pg_factory.url, migrated)
    assert [v for v, _ in catalog(pg_factory.url, fresh)["versions"]] == [m.version for m in migrations()]


def test_every_migration_run_in_turn_equals_the_fresh_schema(pg_factory: PostgresStoreFactory) -> None:
    """Every migration file from 001 on, each applied by the shared runner as the upgrade to its version."""
    fresh = pg_factory.new_schema()
    PostgresStore(pg_factory.url, schema=fresh).setup()
    migrated = pg_factory.new_schema()
    known = migrations()
    with psycopg.connect(pg_factory.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(migrated)))
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(migrated)))
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )

        def apply(migration: Migration) -> None:
            conn.execute(migration.text)

        def record(migration: Migration) -> None:
            row = (migration.version, migration.name)
            conn.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", row)

        for upto in range(1, len(known) + 1):  # one release at a time: 001, then 002 on it, ...
            with conn.transaction():
                applied = {version for (version,) in conn.execute("SELECT version FROM schema_version")}
                ran = run_migrations(applied, known[:upto], apply=apply, record=record)
            assert [m.version for m in ran] == [upto]
    assert catalog(pg_factory.url, fresh) == catalog(pg_factory.url, migrated)


def test_migrations_are_numbered_and_schema_sql_is_not_empty() -> None:
    versions = [m.version for m in migrations()]
    assert versions[0] == 1 and versions == sorted(set(versions))  # setup applies each one not recorded
    assert "CREATE TABLE requests" in fresh_schema_sql()


def test_setup_twice_changes_nothing_and_keeps_data(pg_store: PostgresStore) -> None:
    from crossgate import ReviewQueue, ToolCall

    queue = ReviewQueue(pg_store)
    queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"}))
    before = catalog(pg_store._conninfo, pg_store.schema)
    pg_store.setup()
    assert catalog(pg_store._conninfo, pg_store.schema) == before
    assert len(queue.pending()) == 1


def _setup(url: str) -> None:
    open_store(url).close()


@pytest.mark.slow
def test_setup_racing_in_several_processes_creates_the_schema_once(pg_factory: PostgresStoreFactory) -> None:
    schema = pg_factory.new_schema()
    url = PostgresStore(pg_factory.url, schema=schema).url
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_setup, args=(url,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert len(catalog(pg_factory.url, schema)["versions"]) == len(migrations())


def test_a_schema_newer_than_this_code_is_refused(pg_store: PostgresStore) -> None:
    with psycopg.connect(pg_store._conninfo, autocommit=True) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {}.schema_version (version, name) VALUES (999, 'from_the_future')").format(
                sql.Identifier(pg_store.schema)
            )
        )
    with pytest.raises(ConfigurationError) as refused:
        pg_store.setup()
    known = migrations()[-1].version
    assert str(refused.value) == (
        f"database schema version 999 is newer than this crossgate ({known}); upgrade crossgate"
    )


@pytest.mark.slow
def test_the_wheel_ships_the_sql_files(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(ROOT / "core"),
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("crossgate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"crossgate/stores/sql/postgres/schema.sql", "crossgate/stores/sql/postgres/queries.sql"}
    expected |= {f"crossgate/stores/sql/postgres/migrations/{m.version:03d}_{m.name}.sql" for m in migrations()}
    assert expected <= names

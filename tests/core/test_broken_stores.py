"""A damaged or unusable database is a clear refusal on both SQL stores, never a raw driver error.

A missing audit head, a schema newer than the code, a read-only or locked or corrupted file and an
integer beyond 64 bits each raise ``StoreError`` (or ``ConfigurationError`` for the schema) with a
message naming the cause, and leave what was stored unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crossgate import Approve, ConfigurationError, ReviewQueue, Store, ToolCall
from crossgate.cli import CliContext, app
from crossgate.errors import AuditHeadMissingError
from crossgate.stores.sqlite import SqliteStore

KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def execute(store: Store, statement: str) -> None:
    """Run ``statement`` on the store's database directly, as someone with the file or the server would."""
    if isinstance(store, SqliteStore):
        import sqlite3

        with sqlite3.connect(store.path) as db:
            db.execute(statement)
        return
    import psycopg

    from crossgate.stores.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    with psycopg.connect(store._conninfo, autocommit=True, options=f"-c search_path={store.schema}") as db:
        db.execute(statement.encode())


def target(store: Store) -> str:
    """What ``--db`` names to open this store again."""
    if isinstance(store, SqliteStore):
        return str(store.path)
    from crossgate.stores.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    return store.url


def new_store(kind: str, tmp_path: Path) -> Store:
    if kind == "sqlite":
        made: Store = SqliteStore(tmp_path / "q.db")
        made.setup()
        return made
    from tests.support.postgres import postgres_store_factory

    pg: Store = postgres_store_factory()()
    return pg


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Iterator[Store]:
    made = new_store(kind, tmp_path)
    yield made
    made.close()


@pytest.fixture
def queue(store: Store) -> Iterator[ReviewQueue]:
    made = ReviewQueue(store)
    yield made
    made._waits.close()


def fill(queue: ReviewQueue) -> str:
    """Two requests, the first approved; returns the second (pending) one's id."""
    first = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})).request
    second = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t2"})).request
    assert first is not None and second is not None
    queue.decide(first.id, Approve(), reviewer="ann")
    return second.id


def stored(store: Store) -> tuple[Any, ...]:
    """Everything the queue reads back, to show a refused write changed nothing."""
    from crossgate.stores.base import RequestQuery

    requests = store.list_requests(RequestQuery(limit=500))
    return (
        [r.model_dump() for r in requests.items],
        [e.model_dump() for e in store.list_events()],
        [r.model_dump() for r in store.list_rules(include_revoked=True)],
    )


# the audit head --------------------------------------------------------------------------------
def test_a_missing_head_row_is_a_broken_log_in_audit_verify(store: Store, queue: ReviewQueue) -> None:
    fill(queue)
    execute(store, "DELETE FROM audit_head")
    result = CliRunner().invoke(app, ["audit", "verify"], obj=CliContext(queue=queue))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "crossgate: audit log tampered: the audit log's head row is missing:"
        " the database was changed outside crossgate\n"
    )
    report = queue.verify_audit()
    assert (report.ok, report.checked) == (False, 3)


def test_a_missing_head_row_refuses_every_write_and_changes_nothing(store: Store, queue: ReviewQueue) -> None:
    pending = fill(queue)
    execute(store, "DELETE FROM audit_head")
    before = stored(store)
    with pytest.raises(AuditHeadMissingError):
        queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}))
    with pytest.raises(AuditHeadMissingError):
        queue.decide(pending, Approve(), reviewer="ann")  # a compare-and-set that would win, but has no head
    assert stored(store) == before


# a schema newer than the code ------------------------------------------------------------------
def newest_known(store: Store) -> int:
    if isinstance(store, SqliteStore):
        from crossgate.stores.sqlite import migrations as sqlite_migrations

        return sqlite_migrations()[-1][0]
    from crossgate.stores.postgres import migrations as postgres_migrations

    return postgres_migrations()[-1].version


def future_version(store: Store, version: int) -> None:
    if isinstance(store, SqliteStore):
        execute(store, f"INSERT INTO schema_version (version) VALUES ({version})")
    else:
        execute(store, f"INSERT INTO schema_version (version, name) VALUES ({version}, 'from_the_future')")


def test_a_schema_newer_than_the_code_is_refused_naming_both_versions(store: Store, queue: ReviewQueue) -> None:
    fill(queue)
    future_version(store, 999)
    before = stored(store)
    known = newest_known(store)
    with pytest.raises(ConfigurationError) as refused:
        store.setup()
    assert str(refused.value) == (
        f"database schema version 999 is newer than this crossgate ({known}); upgrade crossgate"
    )
    assert stored(store) == before


def test_the_cli_refuses_a_newer_schema_in_one_line(store: Store, queue: ReviewQueue) -> None:
    fill(queue)
    future_version(store, known_plus_one := newest_known(store) + 1)
    db = target(store)
    result = CliRunner().invoke(app, ["--db", db, "list"], env={"CROSSGATE_DB": None, "CROSSGATE_POLICY": None})
    assert result.exit_code == 1
    assert result.stderr == (
        f"crossgate: error: database schema version {known_plus_one} is newer than this crossgate"
        f" ({known_plus_one - 1}); upgrade crossgate\n"
    )

"""A damaged or unusable database is a clear refusal on both SQL stores, never a raw driver error.

A missing audit head, a schema newer than the code, a read-only or locked or corrupted file and an
integer beyond 64 bits each raise ``StoreError`` (or ``ConfigurationError`` for the schema) with a
message naming the cause, and leave what was stored unchanged.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from typer.testing import CliRunner

from crossgate import (
    ApprovalRequest,
    Approve,
    ConfigurationError,
    RequestStatus,
    ReviewQueue,
    Store,
    StoreError,
    ToolCall,
)
from crossgate.cli import CliContext, app
from crossgate.errors import AuditHeadMissingError
from crossgate.model import NewEvent
from crossgate.stores.sqlite import SqliteStore

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def execute(store: Store, statement: str) -> None:
    """Run ``statement`` on the store's database directly, as someone with the file or the server would."""
    if isinstance(store, SqliteStore):
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
        queue.decide(pending, Approve(), reviewer="ann")
    # The store's own writes, below the queue: a compare-and-set that would win, but has no head to chain to.
    cancelled = queue.get(pending).model_copy(update={"status": RequestStatus.CANCELLED})
    with pytest.raises(AuditHeadMissingError):
        store.update_request(cancelled, (RequestStatus.PENDING,), NewEvent(kind="cancelled", at=T0, request_id=pending))
    with pytest.raises(AuditHeadMissingError):
        store.append_event(NewEvent(kind="not_run", at=T0, request_id=pending))
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


# driver errors become StoreError ----------------------------------------------------------------
BEYOND_64_BITS = 2**64


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make the database file unwritable: immutable for root (who ignores modes), mode 0444 otherwise."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot make a file read-only here: running as root without chattr +i")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_sqlite_a_write_to_a_read_only_file_is_a_store_error(tmp_path: Path) -> None:
    first = ReviewQueue(new_store("sqlite", tmp_path))
    pending = fill(first)
    first.close()
    with read_only(tmp_path / "q.db"):
        store = SqliteStore(tmp_path / "q.db")  # opened after the file became read-only
        queue = ReviewQueue(store)
        before = stored(store)
        with pytest.raises(StoreError, match="SQLite could not insert request: attempt to write a readonly database"):
            queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}))
        with pytest.raises(StoreError, match="SQLite could not update request: attempt to write a readonly database"):
            queue.decide(pending, Approve(), reviewer="ann")
        assert stored(store) == before
    queue.close()


@pytest.mark.postgres
def test_postgres_a_write_in_a_read_only_session_is_a_store_error() -> None:
    from tests.support.postgres import postgres_store_factory

    store = postgres_store_factory()()
    pending = fill(ReviewQueue(store))
    read_only_url = with_options(store.url, "-c default_transaction_read_only=on")
    from crossgate.stores.postgres import PostgresStore

    reader = PostgresStore(read_only_url)
    queue = ReviewQueue(reader)
    before = stored(store)
    try:
        with pytest.raises(StoreError, match="read-only transaction"):
            queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}))
        with pytest.raises(StoreError, match="read-only transaction"):
            queue.decide(pending, Approve(), reviewer="ann")
        assert stored(store) == before
    finally:
        queue.close()
        store.close()


def with_options(url: str, options: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode({'options': options}, quote_via=quote)}"


def test_sqlite_a_database_locked_past_the_busy_timeout_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("crossgate.stores.sqlite.BUSY_TIMEOUT_MS", 200)  # read when a connection opens
    store = new_store("sqlite", tmp_path)
    queue = ReviewQueue(store)
    pending = fill(queue)
    before = stored(store)
    holder = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        with pytest.raises(StoreError, match="SQLite could not insert request: database is locked"):
            queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}))
        with pytest.raises(StoreError, match="SQLite could not update request: database is locked"):
            queue.decide(pending, Approve(), reviewer="ann")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert stored(store) == before
    queue.decide(pending, Approve(), reviewer="ann")  # once the lock is gone, the same write goes through
    queue.close()


@pytest.mark.postgres
def test_postgres_a_table_locked_past_the_lock_timeout_is_a_store_error() -> None:
    from crossgate.stores.postgres import PostgresStore
    from tests.support.postgres import postgres_store_factory

    base = postgres_store_factory()()
    url = with_options(base.url, "-c lock_timeout=200")
    queue = ReviewQueue(PostgresStore(url))
    pending = fill(queue)
    before = stored(base)
    import psycopg

    holder = psycopg.connect(base._conninfo, options=f"-c search_path={base.schema}")
    holder.execute("LOCK TABLE audit_head IN ACCESS EXCLUSIVE MODE")
    try:
        with pytest.raises(StoreError, match="lock timeout"):
            queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}))
    finally:
        holder.rollback()
        holder.close()
    assert stored(base) == before
    queue.decide(pending, Approve(), reviewer="ann")
    queue.close()
    base.close()


def test_an_integer_beyond_64_bits_is_a_store_error_or_an_answer(store: Store, queue: ReviewQueue) -> None:
    fill(queue)
    before = stored(store)
    if isinstance(store, SqliteStore):
        with pytest.raises(StoreError, match="SQLite could not read: Python int too large"):
            store.list_events(after=BEYOND_64_BITS)
    else:
        assert store.list_events(after=BEYOND_64_BITS) == []  # PostgreSQL compares it as a numeric: no events
    with pytest.raises(StoreError):
        store.claim_delivery_cursor("hook", "worker-1", T0, T0, BEYOND_64_BITS)
    assert store.get_delivery_cursor("hook") is None
    assert stored(store) == before


def damage(path: Path, *, offset: int) -> None:
    """Overwrite everything from ``offset`` on with garbage (the WAL was checkpointed at close)."""
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xa5" * (size - offset))


@pytest.mark.parametrize(("offset", "why"), [(0, "file is not a database"), (4096, "database disk image is malformed")])
def test_sqlite_a_corrupted_file_is_a_store_error_and_is_left_as_it_was(tmp_path: Path, offset: int, why: str) -> None:
    first = ReviewQueue(new_store("sqlite", tmp_path))
    fill(first)
    first.close()
    path = tmp_path / "q.db"
    assert not (tmp_path / "q.db-wal").exists() or (tmp_path / "q.db-wal").stat().st_size == 0
    damage(path, offset=offset)
    damaged = path.read_bytes()
    store = SqliteStore(path)
    with pytest.raises(StoreError, match=why):
        store.setup()
    with pytest.raises(StoreError, match=why):
        store.insert_request(make_request(), NewEvent(kind="submitted", at=T0, request_id="req-x"))
    with pytest.raises(StoreError, match=why):
        store.list_events()
    store.close()
    assert path.read_bytes() == damaged


def make_request() -> ApprovalRequest:
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t9"})
    return ApprovalRequest(id="req-x", call=call, fingerprint=call.fingerprint, created_at=T0)

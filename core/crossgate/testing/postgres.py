"""PostgreSQL for the contracts: a fresh ``PostgresStore`` per test, on a fresh schema of the server named by
``CROSSGATE_TEST_POSTGRES_URL`` (the test is skipped when it is unset or the server does not answer).

Each schema is called ``cgt_<unix time>_<random>``; this process drops its own schemas at exit, and
drops schemas a crashed earlier run left behind once they are more than a few hours old.
"""

from __future__ import annotations

import atexit
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ENV = "CROSSGATE_TEST_POSTGRES_URL"
SKIP_REASON = "PostgreSQL tests need CROSSGATE_TEST_POSTGRES_URL, e.g. postgresql://postgres@127.0.0.1:5432/test"
STALE_AFTER_SECONDS = 6 * 3600
_PREFIX = "cgt_"


@cache
def _server_url() -> str | None:
    """The test server's URL if it is set and answers, else None."""
    url = os.environ.get(ENV)
    if not url:
        return None
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except Exception:
        return None
    return url


def postgres_url_or_skip() -> str:
    """The test server's URL; skips the calling test when none is configured or it does not answer."""
    url = _server_url()
    if url is None:
        pytest.skip(SKIP_REASON if not os.environ.get(ENV) else f"{SKIP_REASON} (the server at {ENV} did not answer)")
    return url


class PostgresStoreFactory:
    """Creates ``PostgresStore`` objects, each on a new schema, and drops those schemas at exit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._schemas: list[str] = []
        self._lock = threading.Lock()
        atexit.register(self.drop_all)

    def new_schema(self) -> str:
        """A fresh, unused schema name that ``drop_all`` will remove."""
        name = f"{_PREFIX}{int(time.time())}_{secrets.token_hex(5)}"
        with self._lock:
            self._schemas.append(name)
        return name

    def __call__(self, **options: Any) -> Any:
        """A set-up ``PostgresStore`` on a fresh schema; ``options`` go to its constructor."""
        from crossgate.stores.postgres import PostgresStore

        store = PostgresStore(self.url, schema=self.new_schema(), **options)
        store.setup()
        return store

    def drop_all(self) -> None:
        """Drop every schema this factory created."""
        with self._lock:
            schemas, self._schemas = self._schemas, []
        if schemas:
            _drop(self.url, schemas)


def _drop(url: str, schemas: list[str]) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
            for name in schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
    except psycopg.Error:
        pass  # a server that went away takes its schemas with it, or the next run's sweep does


def _sweep_stale(url: str) -> None:
    import psycopg

    cutoff = time.time() - STALE_AFTER_SECONDS
    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        names = [row[0] for row in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cgt\\_%'")]
    stale = [n for n in names if n.split("_")[1].isdigit() and int(n.split("_")[1]) < cutoff]
    if stale:
        _drop(url, stale)


@cache
def _factory(url: str) -> PostgresStoreFactory:
    _sweep_stale(url)
    return PostgresStoreFactory(url)


def postgres_store_factory() -> Callable[..., Any]:
    """A callable making a fresh ``PostgresStore`` per call; skips the test when no server is configured."""
    return _factory(postgres_url_or_skip())


@contextmanager
def database_url(kind: str, tmp_path: Path) -> Iterator[str]:
    """A database several queues and processes open by the same URL: a SQLite file, or a fresh PostgreSQL schema
    (skipping the test when no server is configured)."""
    if kind == "sqlite":
        yield str(tmp_path / "crossgate.db")
        return
    store = postgres_store_factory()()
    try:
        yield store.url
    finally:
        store.close()

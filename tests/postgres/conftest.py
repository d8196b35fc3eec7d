"""Fixtures for the PostgreSQL tests: a fresh schema per test, skipped without a server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crossgate import ReviewQueue
from crossgate.stores.postgres import PostgresStore
from tests.support.postgres import PostgresStoreFactory, postgres_store_factory


@pytest.fixture
def pg_factory() -> PostgresStoreFactory:
    factory = postgres_store_factory()
    assert isinstance(factory, PostgresStoreFactory)
    return factory


@pytest.fixture
def pg_store(pg_factory: PostgresStoreFactory) -> Iterator[PostgresStore]:
    store: PostgresStore = pg_factory()
    yield store
    store.close()


@pytest.fixture
def pg_queue(pg_store: PostgresStore) -> Iterator[ReviewQueue]:
    queue = ReviewQueue(pg_store)
    yield queue
    queue._waits.close()

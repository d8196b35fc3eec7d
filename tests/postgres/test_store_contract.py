"""PostgreSQL runs ``StoreContract`` by subclassing it, each test on a fresh schema (skipped without a server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import Store
from crossgate.testing import StoreContract
from crossgate.testing.postgres import postgres_store_factory

pytestmark = pytest.mark.postgres


class TestPostgresStore(StoreContract):
    """A fresh schema: the audit log in DEFAULT_PARTITIONS chains keyed by run."""

    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()()
        return store


class TestPostgresStoreOnePartition(StoreContract):
    """One audit chain (a schema set up before migration 013 keeps it): the log as it always was."""

    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()(partitions=1)
        return store

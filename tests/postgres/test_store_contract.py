"""PostgreSQL runs ``StoreContract`` by subclassing it, each test on a fresh schema (skipped without a server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import Store
from crossgate.testing import StoreContract
from crossgate.testing.postgres import postgres_store_factory

pytestmark = pytest.mark.postgres


class TestPostgresStore(StoreContract):
    """A fresh schema with the audit log in eight chains keyed by run (``?partitions=8``)."""

    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()(partitions=8)
        return store


class TestPostgresStoreOnePartition(StoreContract):
    """One audit chain (the default, and what a schema set up before migration 013 keeps): the log as it was."""

    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()(partitions=1)
        return store

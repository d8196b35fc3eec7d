"""PostgreSQL runs ``StoreContract`` by subclassing it, each test on a fresh schema (skipped without a server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import Store
from crossgate.testing import StoreContract
from crossgate.testing.postgres import postgres_store_factory

pytestmark = pytest.mark.postgres


class TestPostgresStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()()
        return store

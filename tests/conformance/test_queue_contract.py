"""``QueueContract`` on every store the project ships, by subclassing it as a third party would."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import MemoryStore, Store
from crossgate.stores.sqlite import SqliteStore
from crossgate.testing import QueueContract
from crossgate.testing.postgres import postgres_store_factory


class TestMemoryQueue(QueueContract):
    def make_store(self, tmp_path: Path) -> Store:
        return MemoryStore()


class TestSqliteQueue(QueueContract):
    durability = "full"

    def make_store(self, tmp_path: Path) -> Store:
        return SqliteStore(tmp_path / "store.db", durability=self.durability)


# The lighter SQLite durabilities only change when commits reach the disk: every test must pass the same.
class TestSqliteQueueDecisionsDurability(TestSqliteQueue):
    durability = "decisions"


class TestSqliteQueueNormalDurability(TestSqliteQueue):
    durability = "normal"


@pytest.mark.postgres
class TestPostgresQueue(QueueContract):
    def make_store(self, tmp_path: Path) -> Store:
        store: Store = postgres_store_factory()()
        return store

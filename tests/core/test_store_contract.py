"""The project's own stores run ``StoreContract`` as a third party's would: by subclassing it.

PostgreSQL's subclass is in tests/postgres/test_store_contract.py.
"""

from __future__ import annotations

from pathlib import Path

from crossgate import MemoryStore, Store
from crossgate.stores.sqlite import SqliteStore
from crossgate.testing import StoreContract


class TestMemoryStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return MemoryStore()


class TestSqliteStore(StoreContract):
    durability = "full"

    def make_store(self, tmp_path: Path) -> Store:
        return SqliteStore(tmp_path / "store.db", durability=self.durability)


# The lighter SQLite durabilities only change when commits reach the disk: every test must pass the same.
class TestSqliteStoreDecisionsDurability(TestSqliteStore):
    durability = "decisions"


class TestSqliteStoreNormalDurability(TestSqliteStore):
    durability = "normal"

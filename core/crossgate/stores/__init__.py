"""Stores: the ``Store`` protocol, the in-memory reference, SQLite (default) and PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

from crossgate.errors import ConfigurationError
from crossgate.stores.base import MAX_PAGE_SIZE, Page, RequestQuery, Store
from crossgate.stores.memory import MemoryStore

DEFAULT_DB = "crossgate.db"
DB_ENV = "CROSSGATE_DB"

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "MAX_PAGE_SIZE",
    "MemoryStore",
    "Page",
    "RequestQuery",
    "Store",
    "open_store",
    "resolve_db",
]


def resolve_db(db: str | None = None) -> str:
    """The database to use: ``db``, else ``$CROSSGATE_DB``, else ``./crossgate.db``."""
    return db or os.environ.get(DB_ENV) or DEFAULT_DB


def open_store(db: str | None = None) -> Store:
    """Open and set up the store a URL or path names.

    ``memory:`` is a MemoryStore; ``postgresql://…`` a PostgresStore (extra ``crossgate[postgres]``);
    ``sqlite:///path``, or any other text taken as a file path, a SqliteStore.
    """
    target = resolve_db(db)
    store: Store
    if target in ("memory:", ":memory:"):
        store = MemoryStore()
    elif target.startswith(("postgresql://", "postgres://")):
        from crossgate.stores.postgres import PostgresStore

        store = PostgresStore(target)
    else:
        from crossgate.stores.sqlite import SqliteStore

        path = target.removeprefix("sqlite:///").removeprefix("sqlite://")
        if not path:
            raise ConfigurationError(f"no SQLite path in {target!r}")
        store = SqliteStore(Path(path))
    store.setup()
    return store

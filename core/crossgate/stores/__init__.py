"""Stores: the ``Store`` protocol, the in-memory reference, SQLite (default) and PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from crossgate.errors import ConfigurationError
from crossgate.stores.base import MAX_PAGE_SIZE, Page, RequestQuery, Store
from crossgate.stores.memory import MemoryStore

if TYPE_CHECKING:
    from crossgate.stores._sqlite_durability import Durability

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

    A SQLite target may choose the store's durability (see ``crossgate.stores.sqlite``):
    ``sqlite:///path?durability=decisions`` (``full``, ``decisions`` or ``normal``; ``full`` if absent).
    In the URL form everything after the first ``?`` is the query, and an unknown parameter or value is a
    ``ConfigurationError``. A plain path may end in ``?durability=<value>`` too; any other ``?`` in a
    plain path stays part of the file name, as before.
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

        path, durability = sqlite_target(target)
        store = SqliteStore(Path(path), durability=durability)
    store.setup()
    return store


_DURABILITY_SUFFIX = "?durability="


def sqlite_target(target: str) -> tuple[str, Durability]:
    """Split a SQLite URL or path into the file path and the durability it asks for (``full`` if none).

    ConfigurationError for an unknown parameter or durability, or no path.
    """
    from crossgate.stores._sqlite_durability import DURABILITIES

    durability = "full"
    seen = False
    if target.startswith("sqlite://"):
        path, _, query = target.removeprefix("sqlite:///").removeprefix("sqlite://").partition("?")
        try:
            params = parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
        except ValueError as exc:
            raise ConfigurationError(f"cannot read the query of {target!r}: {exc}") from exc
        for key, value in params:
            if key != "durability":
                raise ConfigurationError(f"unknown SQLite parameter {key!r} in {target!r}: only 'durability' is known")
            if seen:
                raise ConfigurationError(f"durability is given twice in {target!r}")
            durability, seen = value, True
    elif _DURABILITY_SUFFIX in target:
        path, _, durability = target.rpartition(_DURABILITY_SUFFIX)
    else:
        path = target
    if not path:
        raise ConfigurationError(f"no SQLite path in {target!r}")
    if durability not in DURABILITIES:
        raise ConfigurationError(
            f"unknown SQLite durability {durability!r} in {target!r}: expected one of {', '.join(DURABILITIES)}"
        )
    return path, durability

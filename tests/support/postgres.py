"""A fresh ``PostgresStore`` per test: the conformance kit's helper (``crossgate.testing.postgres``), re-exported."""

from __future__ import annotations

from crossgate.testing.postgres import (
    ENV,
    SKIP_REASON,
    PostgresStoreFactory,
    _factory,
    _server_url,
    database_url,
    postgres_store_factory,
    postgres_url_or_skip,
)

__all__ = [
    "ENV",
    "SKIP_REASON",
    "PostgresStoreFactory",
    "_factory",
    "_server_url",
    "database_url",
    "postgres_store_factory",
    "postgres_url_or_skip",
]

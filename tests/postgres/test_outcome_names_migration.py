"""A PostgreSQL log written by the code before ``rejected``/``answered`` and ``ran``/``not_run`` (migration 6).

The fixture holds the rows crossgate 4c1540e wrote into a schema of version 3 (``tests/support/legacy_log.py``).
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg import sql

from crossgate.stores.postgres import PostgresStore, migrations
from tests.support.legacy_log import IDS, POSTGRES_ROWS, check_migrated
from tests.support.postgres import PostgresStoreFactory

pytestmark = pytest.mark.postgres


def _old_schema(url: str, schema: str) -> None:
    """The schema as the old code left it: migrations 1 to 3, then its rows, written as they were."""
    rows: dict[str, list[dict[str, Any]]] = json.loads(POSTGRES_ROWS.read_text(encoding="utf-8"))
    old_versions = [row["version"] for row in rows["schema_version"]]
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET LOCAL search_path = {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in migrations():
            if migration.version in old_versions:
                conn.execute(migration.text)
                conn.execute(
                    "INSERT INTO schema_version (version, name) VALUES (%s, %s)", (migration.version, migration.name)
                )
        for table in ("requests", "events"):
            for row in rows[table]:
                names = sql.SQL(", ").join(map(sql.Identifier, row))
                values = sql.SQL(", ").join(sql.Placeholder() * len(row))
                conn.execute(
                    sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(sql.Identifier(table), names, values),
                    list(row.values()),
                )
        [head] = rows["audit_head"]
        conn.execute("UPDATE audit_head SET seq = %s, hash = %s", (head["seq"], head["hash"]))


def _read(url: str, schema: str, query: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        return dict(conn.execute(query).fetchall())  # type: ignore[arg-type]


def test_setup_migrates_the_requests_and_keeps_the_chain(pg_factory: PostgresStoreFactory) -> None:
    schema = pg_factory.new_schema()
    _old_schema(pg_factory.url, schema)
    old = _read(pg_factory.url, schema, "SELECT id, data FROM requests")
    store = PostgresStore(pg_factory.url, schema=schema)
    store.setup()
    statuses = _read(pg_factory.url, schema, "SELECT id, status FROM requests")
    assert (statuses[IDS["rejected"]], statuses[IDS["answered"]], statuses[IDS["approved"]]) == (
        "rejected",
        "answered",
        "applied",
    )
    assert 6 in _read(pg_factory.url, schema, "SELECT version, name FROM schema_version")
    check_migrated(store, old, _read(pg_factory.url, schema, "SELECT id, data FROM requests"))
    store.close()


def test_a_body_whose_status_text_is_ambiguous_keeps_its_text_and_still_reads_right(
    pg_factory: PostgresStoreFactory,
) -> None:
    # The top-level status is found as text after the request's own fingerprint. Where that text occurs
    # twice (here planted in the context) the body is left as written; the column moves, and the model
    # reads "applied" with a reject decision as rejected.
    schema = pg_factory.new_schema()
    _old_schema(pg_factory.url, schema)
    with psycopg.connect(pg_factory.url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        (data,) = conn.execute("SELECT data FROM requests WHERE id = %s", (IDS["rejected"],)).fetchone()  # type: ignore[misc]
        fp = json.loads(data)["fingerprint"]
        planted = data.replace('"context":{}', f'"context":{{"x":{{"fingerprint":"{fp}","status":"applied"}}}}')
        assert planted != data
        conn.execute("UPDATE requests SET data = %s WHERE id = %s", (planted, IDS["rejected"]))
    store = PostgresStore(pg_factory.url, schema=schema)
    store.setup()
    after = _read(pg_factory.url, schema, "SELECT id, data FROM requests")[IDS["rejected"]]
    assert after == planted
    assert _read(pg_factory.url, schema, "SELECT id, status FROM requests")[IDS["rejected"]] == "rejected"
    assert store.get_request(IDS["rejected"]).status.value == "rejected"  # type: ignore[union-attr]
    store.close()

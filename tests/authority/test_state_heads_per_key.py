"""State heads are kept per signing key (kid): another key's signer replaces nobody's head, and a head filed
under one kid but signed with another is ignored by gates and signers alike.

Before migration 0010/010 the store kept one head row, so any process holding another key (the README's
module-level ``Authority.generate()`` queue, imported by a worker) replaced the authority's head at start
and every gate pinned to the authority failed closed. Each scenario runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.adapter import verified_queue
from crossgate.authority import Authority, StateHeadClaims, TrustedKeys
from crossgate.authority.consumed import build_filter
from crossgate.errors import SignatureError
from crossgate.state_head import HeadSigner, read_state_head
from crossgate.stores.migrations import Migration, run_migrations
from crossgate.stores.sqlite import SqliteStore, _statements, register_functions
from crossgate.stores.sqlite import migrations as sqlite_migrations
from crossgate.testing.postgres import database_url
from tests.authority.raw import raw_access
from tests.authority.world import DATABASES

ASK = Policy(rules=(PolicyRule(name="deletes", tool="delete_*", verdict=VerdictKind.ASK),))


@pytest.fixture(params=DATABASES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(str(request.param), tmp_path) as found:
        yield found


def forged_head(authority: Authority, *, revoked_rules: tuple[str, ...] = ()) -> str:
    """A genuine head of ``authority`` dated an hour ahead (newer than anything the operator signed)."""
    later = datetime.now(UTC) + timedelta(hours=1)
    claims = StateHeadClaims(
        issued_at=later,
        expires_at=later + timedelta(days=1),
        rules_version=0,
        revoked_rules=revoked_rules,
        audit_seq=0,
        audit_hash="0" * 64,
        consumed=build_filter(()),
        consumed_count=0,
    )
    return authority.sign(claims)


def test_two_authorities_on_one_store_each_gate_sees_its_own_head(url: str) -> None:
    operator, generated = Authority.generate(), Authority.generate()
    server = ReviewQueue(open_store(url), ASK, authority=operator)
    imported = ReviewQueue(open_store(url), ASK, authority=generated)  # signs a head at start, after the server
    agent = ReviewQueue(open_store(url), ASK)
    try:
        store = agent.store
        mine = read_state_head(store.get_state_head(operator.kid), operator.trusted_keys(), operator.kid)
        theirs = read_state_head(store.get_state_head(generated.kid), generated.trusted_keys(), generated.kid)
        assert mine is not None and theirs is not None and mine != theirs
        gate = verified_queue(agent, operator.public_key.pin)
        assert gate.heads is not None and gate.heads.current() == mine  # not stale: its own head is there
        imported.sign_state_head()  # the other key signing again changes nothing for this gate
        assert read_state_head(store.get_state_head(operator.kid), operator.trusted_keys()) == mine
        other = verified_queue(ReviewQueue(open_store(url), ASK), generated.public_key.pin)
        assert other.heads is not None and other.heads.current().issued_at > theirs.issued_at
        assert store.get_state_head(Authority.generate().kid) is None
    finally:
        for queue in (server, imported, agent):
            queue.close()


def test_a_head_filed_under_another_kid_is_ignored_by_gates_and_signers(url: str, tmp_path: Path) -> None:
    operator, rotated = Authority.generate(), Authority.generate()
    both = TrustedKeys.parse(f"{operator.public_key.pin}\n{rotated.public_key.pin}")
    server = ReviewQueue(open_store(url), ASK, authority=operator, trusted=both)
    agent = ReviewQueue(open_store(url), ASK)
    try:
        raw = raw_access(url)
        # A writer of the store files a genuine (rotated-key) head, newer and naming a forged revocation, under
        # the operator's kid, and deletes the rotated key's own row.
        raw.execute(
            "UPDATE state_heads SET token = ? WHERE kid = ?", forged_head(rotated, revoked_rules=("r1",)), operator.kid
        )
        raw.execute("DELETE FROM state_heads WHERE kid = ?", rotated.kid)
        gate = verified_queue(agent, both, head_file=tmp_path / "new-machine" / "head.json")
        assert gate.heads is not None
        with pytest.raises(SignatureError) as refused:
            gate.heads.current()
        assert refused.value.reason == "stale_head"
        # The same head filed where it belongs is adopted, by the gate and by the operator's signer.
        raw.execute(
            "INSERT INTO state_heads (kid, issued_at, token) VALUES (?, ?, ?)",
            rotated.kid,
            datetime.now(UTC).isoformat(),
            forged_head(rotated, revoked_rules=("r2",)),
        )
        signed = HeadSigner(agent.store, operator, trusted=both).sign()
        assert signed.revoked_rules == ("r2",)  # a rotated key's head carries over; the misfiled one did not
        assert gate.heads.current().revoked_rules == ("r2",)
    finally:
        server.close()
        agent.close()


def test_a_signer_always_reads_its_own_heads_whatever_else_it_trusts(url: str) -> None:
    operator, pinned = Authority.generate(), Authority.generate()
    store = open_store(url)
    try:
        first = HeadSigner(store, operator, trusted=pinned.trusted_keys())
        assert operator.kid in first.trusted.kids  # type: ignore[union-attr]
        rule_head = forged_head(operator, revoked_rules=("r9",))
        store.put_state_head(operator.kid, rule_head, datetime.now(UTC))
        assert HeadSigner(store, operator, trusted=pinned.trusted_keys()).sign().revoked_rules == ("r9",)
    finally:
        store.close()


# the upgrade of a database that kept one head row (schema version 9) ---------------------------------------
def sqlite_at_version_9(path: Path) -> None:
    known = sqlite_migrations()
    with sqlite3.connect(path, isolation_level=None) as db:
        register_functions(db)

        def apply(migration: Migration) -> None:
            for statement in _statements(migration.text):
                db.execute(statement)

        def record(migration: Migration) -> None:
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (migration.version,))

        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        run_migrations(set(), known[:9], apply=apply, record=record)


@pytest.mark.parametrize("row", ["a head", "not a token"])
def test_a_sqlite_database_with_one_head_row_upgrades_keeping_it_under_its_kid(tmp_path: Path, row: str) -> None:
    authority = Authority.generate()
    path = tmp_path / "v9.db"
    sqlite_at_version_9(path)
    token = forged_head(authority) if row == "a head" else "garbage.not.a-token"
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO state_heads (one, issued_at, token) VALUES (1, ?, ?)", ("2026-12-01T00:00:00", token))
    store = SqliteStore(path)
    store.setup()
    try:
        assert store.schema_version() == 10
        assert store.get_state_head(authority.kid) == (token if row == "a head" else None)
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM state_heads").fetchone() == ((1,) if row == "a head" else (0,))
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("row", ["a head", "not a token"])
def test_a_postgres_schema_with_one_head_row_upgrades_keeping_it_under_its_kid(row: str) -> None:
    import psycopg
    from psycopg import sql

    from crossgate.stores.postgres import PostgresStore, migrations
    from crossgate.testing.postgres import postgres_store_factory

    factory = postgres_store_factory()
    schema = factory.new_schema()  # type: ignore[attr-defined]
    authority = Authority.generate()
    token = forged_head(authority) if row == "a head" else "e30.not.a-token"
    known = migrations()
    with psycopg.connect(factory.url, autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in known[:9]:
            conn.execute(migration.text)
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)", (migration.version, migration.name)
            )
        conn.execute("INSERT INTO state_heads (one, issued_at, token) VALUES (1, now(), %s)", (token,))
    store = PostgresStore(factory.url, schema=schema)  # type: ignore[attr-defined]
    store.setup()
    try:
        assert store.get_state_head(authority.kid) == (token if row == "a head" else None)
        with psycopg.connect(factory.url, autocommit=True) as conn:  # type: ignore[attr-defined]
            found = conn.execute(sql.SQL("SELECT kid FROM {}.state_heads").format(sql.Identifier(schema))).fetchall()
        assert found == ([(authority.kid,)] if row == "a head" else [])
    finally:
        store.close()


# over HTTP: GET /api/agent/v1/state-head?kid=..., as RemoteQueue and the TypeScript gate ask -------------------
def test_the_server_answers_each_kids_head_and_a_remote_gate_reads_its_own(tmp_path: Path) -> None:
    from crossgate.remote import RemoteQueue
    from crossgate.server.app import create_app
    from tests.remote.conftest import settings
    from tests.remote.server import AGENT_TOKEN
    from tests.server.live import live_server

    url = str(tmp_path / "crossgate.db")
    operator, generated = Authority.generate(), Authority.generate()
    server = ReviewQueue(open_store(url), ASK, authority=operator)
    imported = ReviewQueue(open_store(url), ASK, authority=generated)
    try:
        with live_server(create_app(server, settings())) as base:
            agent = RemoteQueue(base, token=AGENT_TOKEN)
            try:
                assert agent.state_head_token(generated.kid) == imported.store.get_state_head(generated.kid)
                assert agent.state_head_token(Authority.generate().kid) is None
                gate = verified_queue(agent, operator.public_key)
                assert gate.heads is not None
                head = gate.heads.current()
                assert head == read_state_head(server.store.get_state_head(operator.kid), operator.trusted_keys())
                import httpx

                auth = {"Authorization": f"Bearer {AGENT_TOKEN}"}
                default = httpx.get(f"{base}/api/agent/v1/state-head", headers=auth)
                assert default.json() == {"token": server.store.get_state_head(operator.kid)}
                bad = httpx.get(f"{base}/api/agent/v1/state-head", params={"kid": "not a kid"}, headers=auth)
                assert bad.status_code == 422 and "token" not in bad.json()
            finally:
                agent.close()
    finally:
        server.close()
        imported.close()

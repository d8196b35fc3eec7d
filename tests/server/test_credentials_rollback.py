"""A revoked or rotated credential stays refused when a writer of the store puts yesterday's copy back.

The rows are signed, but the signature does not cover ``revoked_at``: restoring the SQLite file (or, on
PostgreSQL, rewriting the rows) makes the store show the old credential live again. The server's signer
names every revoked credential in its state heads and remembers them, in memory and in its own head file
(``ServerSettings.state_head_file``), so the same server and a restarted one both answer 401.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from crossgate import ReviewQueue, open_store
from crossgate.authority import Authority
from crossgate.credentials import Credentials, Scope, hash_token
from crossgate.server.app import create_app
from crossgate.testing.postgres import database_url
from tests.authority.raw import raw_access
from tests.authority.world import DATABASES
from tests.server.conftest import POLICY, make_settings

AGENT = "/api/agent/v1/state-head"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Server:
    """One crossgate server process on ``url``, with its head file."""

    def __init__(self, url: str, authority: Authority, head_file: Path) -> None:
        self.queue = ReviewQueue(open_store(url), POLICY, authority=authority)
        self.client = TestClient(create_app(self.queue, make_settings(state_head_file=str(head_file))))

    def answers(self, token: str) -> int:
        return self.client.get(AGENT, headers=bearer(token)).status_code

    def close(self) -> None:
        self.client.close()
        self.queue.close()


@pytest.fixture(params=DATABASES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(str(request.param), tmp_path) as found:
        yield found


def copy_sqlite(source: str, target: str) -> None:
    """A consistent copy of the whole database file (the backup API: what ``cp`` of a quiet file gives)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


@pytest.mark.parametrize("change", ["revoke", "rotate"])
def test_a_revoked_or_rotated_token_put_back_by_a_store_rollback_is_refused(
    url: str, tmp_path: Path, change: str
) -> None:
    authority = Authority.generate()
    setup = open_store(url)
    manager = Credentials(setup, authority=authority)
    admin = manager.add("reviewer", "root", scope=Scope(admin=True), actor="ops").token
    bot = manager.add("agent", "bot", actor="ops")
    setup.close()
    head_file = tmp_path / "server" / "head.json"
    server = Server(url, authority, head_file)
    try:
        assert server.answers(bot.token) == 200
        sqlite = not url.startswith("postgres")
        if sqlite:
            copy_sqlite(url, str(tmp_path / "yesterday.db"))
        changed = server.client.post(f"/api/admin/agents/bot/{change}", headers=bearer(admin))
        assert changed.status_code == 200, changed.text
        assert server.answers(bot.token) == 401
        if change == "rotate":
            assert server.answers(changed.json()["token"]) == 200
        # The writer of the store puts yesterday's credentials back (and, on PostgreSQL, deletes the heads).
        if sqlite:
            copy_sqlite(str(tmp_path / "yesterday.db"), url)
        else:
            raw = raw_access(url)
            raw.execute("DELETE FROM credentials WHERE kind = 'agent' AND id <> ?", bot.credential.id)
            raw.execute("UPDATE credentials SET revoked_at = NULL, revoked_by = NULL WHERE id = ?", bot.credential.id)
            raw.execute("DELETE FROM state_heads")
        restored = server.queue.store.credential_for(hash_token(bot.token))  # type: ignore[attr-defined]
        assert restored is not None and restored.revoked_at is None  # the store shows it live again
        assert server.answers(bot.token) == 401
    finally:
        server.close()
    restarted = Server(url, authority, head_file)
    try:
        assert restarted.answers(bot.token) == 401  # its head file remembers the revocation
        assert restarted.answers(admin) != 401  # the admin's credential was never revoked: still good
    finally:
        restarted.close()
    forgetful = Server(url, authority, tmp_path / "another-machine" / "head.json")
    try:
        # The boundary: a server with neither the memory nor the file trusts the store's rows.
        assert forgetful.answers(bot.token) == 200
    finally:
        forgetful.close()

"""Credentials as commands against two real ``crossgate serve`` processes on one database (SQLite and
PostgreSQL): an admin over the server and an operator on the database; a revocation or rotation is refused at
once by the other process; a non-admin and bad input change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from crossgate.authority import Keyring
from crossgate.stores.sqlite import SqliteStore
from crossgate.testing.postgres import database_url
from tests.server.live_serve import Home, Served, serve

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as url:
        yield url


def _me(served: Served, token: str) -> int:
    return httpx.get(f"{served.base}/api/me", headers={"Authorization": f"Bearer {token}"}).status_code


def _agent(served: Served, token: str) -> int:
    return httpx.get(f"{served.base}/api/agent/v1/requests", headers={"Authorization": f"Bearer {token}"}).status_code


def test_two_servers_one_database_credentials_by_admin_and_operator(db: str, tmp_path: Path) -> None:
    keys = Keyring.init(tmp_path / "keys")
    home = Home(tmp_path, extra={"CROSSGATE_AUTHORITY_DIR": str(keys.directory)})
    one = serve(home, "--db", db, "--data-dir", str(tmp_path / "d1"))
    two = serve(home, "--db", db, "--data-dir", str(tmp_path / "d2"))
    try:
        admin = (tmp_path / "d1" / "admin.token").read_text().strip()
        assert not any("first run" in line for line in two.printed), "the database was set up already"
        as_admin = {"CROSSGATE_TOKEN": admin}

        added = home.cli("reviewers", "add", "ann", "--scope", "tools=delete_*", "--server", one.base, **as_admin)
        assert added.returncode == 0, added.stderr
        ann = added.stdout.strip()
        assert ann.startswith("cgr_") and "shown this once" in added.stderr
        assert _me(two, ann) == 200

        # a reviewer without the admin scope is refused, and nothing changes
        listed = home.cli("reviewers", "list", "--json", "--server", one.base, **as_admin)
        before = json.loads(listed.stdout)
        refused = home.cli("reviewers", "add", "eve", "--scope", "admin", "--server", two.base, CROSSGATE_TOKEN=ann)
        assert refused.returncode == 1 and "not an admin" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        again = home.cli("reviewers", "list", "--json", "--server", one.base, **as_admin)
        assert json.loads(again.stdout) == before

        # revoked over server one: server two refuses the token at once
        revoked = home.cli("reviewers", "revoke", "ann", "--server", one.base, **as_admin)
        assert revoked.returncode == 0, revoked.stderr
        assert _me(two, ann) == 401 and _me(one, ann) == 401

        # the operator, on the database with the key: add and rotate an agent
        token_file = tmp_path / "admin.token"
        token_file.write_text(admin + "\n")
        bot = home.cli("--db", db, "agents", "add", "bot", "--json")
        assert bot.returncode == 0, bot.stderr
        old = json.loads(bot.stdout)["token"]
        assert _agent(two, old) == 200 and _agent(one, old) == 200
        rotated = home.cli("--db", db, "agents", "rotate", "bot")
        new = rotated.stdout.strip()
        assert rotated.returncode == 0 and new != old
        assert _agent(one, old) == 401 and _agent(two, old) == 401, "the old value is refused at once"
        assert _agent(two, new) == 200
        shown = home.cli("agents", "list", "--json", "--all", "--server", two.base, "--token-file", str(token_file))
        assert [(a["name"], a["revoked_at"] is None) for a in json.loads(shown.stdout)["items"]] == [
            ("agent", True),
            ("bot", False),
            ("bot", True),
        ]
        assert old not in shown.stdout and new not in shown.stdout
    finally:
        one.stop()
        two.stop()


BAD_INPUT = [
    (("reviewers", "rotate", "nobody"), 3, "no live reviewer"),
    (("reviewers", "add", "admin"), 4, "exists already"),
    (("reviewers", "add", "ann", "--scope", "teams=x"), 2, "bad scope"),
    (("reviewers", "add", "a b"), 2, "bad reviewer name"),
    (("agents", "revoke", "nobody"), 3, "no live agent"),
]


def test_bad_input_is_one_line_and_changes_nothing_over_the_server_and_on_the_database(tmp_path: Path) -> None:
    home = Home(tmp_path)
    served = serve(home)
    try:
        admin = (home.data / "admin.token").read_text().strip()
        snapshot = [home.cli(kind, "list", "--json", "--all").stdout for kind in ("reviewers", "agents")]
        for args, code, words in BAD_INPUT:
            for extra in ((), ("--server", served.base)):
                result = home.cli(*args, *extra, CROSSGATE_TOKEN=admin)
                assert result.returncode == code, (args, extra, result.stderr)
                lines = result.stderr.strip().splitlines()
                assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.stderr
                assert result.stdout == ""
        assert [home.cli(kind, "list", "--json", "--all").stdout for kind in ("reviewers", "agents")] == snapshot
    finally:
        served.stop()


def test_the_operator_without_the_key_is_refused_in_one_line(tmp_path: Path) -> None:
    home = Home(tmp_path)
    db = SqliteStore(tmp_path / "q.db")
    db.setup()
    db.close()
    result = home.cli(
        "--db", str(tmp_path / "q.db"), "reviewers", "add", "ann", "--authority-dir", str(tmp_path / "no-keys")
    )
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "no-keys" in result.stderr and result.stdout == ""
    store = SqliteStore(tmp_path / "q.db")
    assert store.list_credentials(include_revoked=True) == []
    store.close()

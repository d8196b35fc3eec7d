"""``crossgate login``, ``logout`` and ``login --status``, and which queue a command then works on."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crossgate import ReviewQueue, open_store
from crossgate.cli.config import Login, write_login
from crossgate.cli.context import os_user
from crossgate.model import RequestStatus
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.settings import reviewer
from tests.cli.backends import SCOPED_TOKEN, TOKEN, Reviewing, Run, reviewing
from tests.server.live import live_server

CLOSED = "http://127.0.0.1:9"
"""Nothing listens on the discard port."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Reviewing]:
    with reviewing("server", tmp_path) as world:
        yield world


def _login_file(world: Reviewing) -> Path:
    return world.config / "crossgate" / "config.toml"


def _one_line(run: Run, code: int, says: str) -> None:
    assert run.exit_code == code, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("crossgate: error: "), run.stderr
    assert says in run.stderr, run.stderr


@pytest.mark.slow
def test_login_keeps_the_token_owner_only_and_says_who_you_are(served: Reviewing) -> None:
    path = _login_file(served)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert TOKEN in path.read_text()
    status = served.ok("login", "--status")
    assert status.stdout == f"logged in to {served.url} as {os_user()} (may decide everything)\n"
    shown = served.ok("login", "--status", "--json").json()
    assert shown == {"server": served.url, "reviewer": os_user(), "scope": "everything", "config": str(path)}


@pytest.mark.slow
def test_a_token_the_server_refuses_is_one_line_and_nothing_is_saved(served: Reviewing, tmp_path: Path) -> None:
    before = _login_file(served).read_bytes()
    _one_line(served("login", str(served.url), input="not-a-token\n"), 1, "does not accept this reviewer token")
    assert _login_file(served).read_bytes() == before  # the earlier login stands
    fresh = tmp_path / "fresh"
    refused = served("login", str(served.url), input="not-a-token\n", XDG_CONFIG_HOME=str(fresh))
    _one_line(refused, 1, "nothing saved")
    _one_line(served("login", CLOSED, input=TOKEN + "\n", XDG_CONFIG_HOME=str(fresh)), 1, "cannot reach")
    assert not fresh.exists()


@pytest.mark.slow
def test_the_token_never_comes_from_an_argument(served: Reviewing, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    run = served("login", str(served.url), TOKEN, XDG_CONFIG_HOME=str(fresh))
    assert run.exit_code == 2 and TOKEN not in run.stdout
    assert served("login", str(served.url), "--token", TOKEN, XDG_CONFIG_HOME=str(fresh)).exit_code == 2
    assert not fresh.exists()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with_file = served("login", str(served.url), "--token-file", str(token_file), XDG_CONFIG_HOME=str(fresh))
    assert with_file.exit_code == 0, with_file
    assert (fresh / "crossgate" / "config.toml").exists()


def test_a_login_url_must_be_https_unless_it_is_this_machine(tmp_path: Path) -> None:
    world = Reviewing("server", tmp_path / "db", ReviewQueue(open_store("memory:")), tmp_path / "config")
    world.env = {"XDG_CONFIG_HOME": str(world.config), "CROSSGATE_ALLOW_PLAIN_HTTP": None}
    _one_line(world("login", "http://review.example.com", input=TOKEN + "\n"), 2, "use https")
    _one_line(world("login", "ftp://review.example.com", input=TOKEN + "\n"), 2, "not an http(s) URL")
    assert not world.config.exists()


@pytest.mark.slow
def test_a_login_file_others_may_read_is_refused_and_logout_removes_it(served: Reviewing) -> None:
    path = _login_file(served)
    os.chmod(path, 0o644)
    _one_line(served("list"), 1, "other users may read or change it (mode 0644); run: chmod 600")
    _one_line(served("login", "--status"), 1, "other users may read")
    assert served.ok("logout").stdout.startswith("logged out")
    assert not path.exists()
    assert served.ok("logout").stdout == "not logged in\n"
    _one_line(served("login", "--status"), 1, "not logged in to a review server")


@pytest.mark.slow
def test_db_wins_then_server_then_the_login_then_the_local_database(served: Reviewing, tmp_path: Path) -> None:
    request_id = served.submit()
    local_db = tmp_path / "local.db"
    ReviewQueue(open_store(str(local_db))).close()  # an empty database of its own

    def listed(*args: str, **env: str | None) -> list[str]:
        run = served(*args, "list", "--json", **env)
        assert run.exit_code == 0, run
        return [r["id"] for r in run.json()["items"]]

    assert listed() == [request_id]  # the login
    assert listed("--db", str(local_db)) == []  # --db on the command line wins
    assert listed("--db", str(local_db), CROSSGATE_SERVER=served.url) == []
    # $CROSSGATE_SERVER beats the login, and the login's token is never sent to another server
    _one_line(served("list", CROSSGATE_SERVER=CLOSED), 6, f"--server needs a reviewer token for {CLOSED}")
    _one_line(served("list", CROSSGATE_SERVER=CLOSED, CROSSGATE_TOKEN=TOKEN), 1, "cannot reach the review server")
    both = served("--db", str(local_db), "list", "--server", str(served.url))
    _one_line(both, 2, "--db and --server name two different queues")
    served.ok("logout")
    assert listed(CROSSGATE_DB=str(local_db)) == []  # logged out: the local database again
    assert listed(CROSSGATE_SERVER=served.url, CROSSGATE_TOKEN=TOKEN) == [request_id]


@pytest.mark.slow
def test_a_revoked_token_or_a_server_that_is_down_is_one_line_and_changes_nothing(served: Reviewing) -> None:
    request_id = served.submit()
    before = served.stored()
    others = ServerSettings(reviewers=(reviewer("lee", SCOPED_TOKEN),), secret=b"s" * 32)
    with live_server(create_app(served.agent, others)) as url:
        write_login(Login(server=url, token=TOKEN), _login_file(served))  # this server no longer knows the token
        for command in (["list"], ["approve", request_id], ["rules", "list"], ["events"]):
            _one_line(served(*command), 1, f"the review server at {url} refused the reviewer token")
        wrong = served("show", request_id, "--json", CROSSGATE_TOKEN="wrong-token-000")
        assert wrong.json()["error"]["type"] == "ReviewerTokenRefusedError"
    for command in (["list"], ["approve", request_id], ["review"], ["cancel", request_id]):
        _one_line(served(*command), 1, f"cannot reach the review server at {url}")
    assert served.stored() == before
    assert served.agent.get(request_id).status is RequestStatus.PENDING


@pytest.mark.slow
def test_outside_the_reviewers_scope_is_exit_5_and_changes_nothing(served: Reviewing) -> None:
    request_id = served.submit("delete_ticket")
    before = served.stored()
    as_lee = {"CROSSGATE_TOKEN": SCOPED_TOKEN}
    _one_line(served("approve", request_id, **as_lee), 5, "out of scope")
    _one_line(served("cancel", request_id, **as_lee), 5, "out of scope")
    _one_line(served("rules", "add", "--tool", "*", "--effect", "allow", **as_lee), 5, "beyond lee's scope")
    rule = served.ok("rules", "add", "--tool", "delete_ticket", "--effect", "allow", "--json").json()["id"]
    _one_line(served("rules", "revoke", rule, **as_lee), 5, "beyond lee's scope")
    served.ok("rules", "revoke", rule)
    before = served.stored()
    _one_line(served("approve", request_id, "--reviewer", "ann"), 2, "leave --reviewer out with --server")
    assert served.stored() == before


def test_a_malformed_login_file_is_one_line(tmp_path: Path) -> None:
    world = Reviewing("server", tmp_path / "db", ReviewQueue(open_store("memory:")), tmp_path / "config")
    world.env = {"XDG_CONFIG_HOME": str(world.config), "CROSSGATE_SERVER": None, "CROSSGATE_DB": None}
    path = _login_file(world)
    path.parent.mkdir(parents=True)
    path.write_text('server = "https://review.example.com"\n')
    os.chmod(path, 0o600)
    _one_line(world("list"), 1, "names no server and token; run: crossgate login URL")
    path.write_text("server = [")
    _one_line(world("login", "--status"), 1, "cannot read the crossgate login file")
    assert world.ok("logout").stdout == f"logged out: removed {path}\n"


class _NotCrossgate(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html>a router's login page</html>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow
def test_a_server_that_is_not_crossgate_is_one_line_and_nothing_is_saved(tmp_path: Path) -> None:
    world = Reviewing("server", tmp_path / "db", ReviewQueue(open_store("memory:")), tmp_path / "config")
    world.env = {"XDG_CONFIG_HOME": str(world.config), "CROSSGATE_SERVER": None}
    http = ThreadingHTTPServer(("127.0.0.1", 0), _NotCrossgate)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{http.server_address[1]}"
        _one_line(world("login", url, input=TOKEN + "\n"), 1, "answered with something that is not its API")
        _one_line(world("list", "--server", url, CROSSGATE_TOKEN=TOKEN), 1, "not its API")
    finally:
        http.shutdown()
        http.server_close()
    assert not world.config.exists()

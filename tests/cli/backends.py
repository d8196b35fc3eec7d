"""The CLI against a local database or against a review server, driven by the same command lines.

A :class:`Reviewing` holds one SQLite database that an agent's queue submits to, and runs ``crossgate``
in-process on it: ``local`` with ``$CROSSGATE_DB`` and the operator's signing key, ``server`` logged in
(``crossgate login``) to a real uvicorn on 127.0.0.1 that serves the same database. The reviewer is named
after the OS user on both sides (the local default, and the token's reviewer on the server, an admin), so
every command line is the same and so must be what it prints. The server signs with the operator's key,
and the CLI on the server's side pins its public key: signatures check alike on both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from crossgate import ReviewQueue, ToolCall, open_store
from crossgate.authority import Keyring, TrustedKeys
from crossgate.authority.keyring import KEYRING_FILE
from crossgate.cli import app
from crossgate.cli.context import os_user
from crossgate.model import ApprovalRequest, ParkedRunStatus
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.settings import reviewer
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery
from tests.server.live import live_server
from tests.support.keys import operator_keys

MODES = ("local", "server")
TOKEN = "reviewer-token-0001"
SCOPED_TOKEN = "scoped-token-00002"
"""A second reviewer, ``lee``, who may decide only ``read_*`` tools."""
KEYS = operator_keys()
PIN = KEYS / KEYRING_FILE
"""The operator's public keys, as ``audit verify --authority`` takes them."""


@dataclass(frozen=True)
class Run:
    """What one ``crossgate`` command did."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class Reviewing:
    """One database, an agent submitting to it, and ``crossgate`` run on it locally or through the server."""

    mode: str
    db: Path
    agent: ReviewQueue
    config: Path
    url: str | None = None
    env: dict[str, str | None] = field(default_factory=dict)

    def __call__(self, *args: str, input: str | None = None, **env: str | None) -> Run:
        result = CliRunner().invoke(app, list(args), input=input, env={**self.env, **env})
        return Run(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, input: str | None = None) -> Run:
        run = self(*args, input=input)
        assert run.exit_code == 0, (self.mode, args, run)
        return run

    def submit(self, tool: str = "delete_ticket", args: dict[str, Any] | None = None, **options: Any) -> str:
        """Submit as the agent does; the new request's id."""
        call_fields = {k: options.pop(k) for k in ("run", "agent") if k in options}
        call = ToolCall(framework="langgraph", tool=tool, args=args or {"id": "t1"}, **call_fields)
        request = self.agent.submit(call, **options).request
        assert request is not None
        return request.id

    def park(self, *request_ids: str, failed: bool = False) -> str:
        """A parked run of these requests (failed in its one resume when ``failed``); its id."""
        parked = self.agent.park(framework="langgraph", run="run-1", request_ids=request_ids, state='{"s": 1}')
        if failed:
            self.agent.claim_parked(parked.id, owner="worker-1")
            self.agent.finish_parked(parked.id, owner="worker-1", status=ParkedRunStatus.FAILED, outcome="boom")
        return parked.id

    def stored(self) -> tuple[list[ApprovalRequest], list[Any], list[Any]]:
        """Every request, event and rule in the database, read directly."""
        store = self.agent.store
        requests = self.agent.list_requests(RequestQuery(statuses=(), limit=MAX_PAGE_SIZE)).items
        return requests, store.list_events(), store.list_rules(include_revoked=True)


def server_settings(sweep_seconds: float = 0.2) -> ServerSettings:
    """The server's reviewers: the OS user with every scope (an admin), and lee with read_* tools only."""
    reviewers = (reviewer(os_user(), TOKEN, admin=True), reviewer("lee", SCOPED_TOKEN, tools=["read_*"]))
    return ServerSettings(reviewers=reviewers, secret=b"s" * 32, sweep_seconds=sweep_seconds)


@contextmanager
def reviewing(mode: str, tmp_path: Path, settings: ServerSettings | None = None) -> Iterator[Reviewing]:
    """A database with the CLI working on it as ``mode`` says (the server's ``settings`` given, or the default)."""
    db = tmp_path / "crossgate.db"
    config = tmp_path / "config"
    with ExitStack() as stack:
        agent = ReviewQueue(open_store(str(db)), trusted=TrustedKeys.from_file(PIN))
        stack.callback(agent.close)
        base: dict[str, str | None] = {
            "XDG_CONFIG_HOME": str(config),
            "CROSSGATE_TOKEN": None,
            "CROSSGATE_SERVER": None,
            "CROSSGATE_POLICY": None,
            "CROSSGATE_AUTHORITY_DIR": None,
            "CROSSGATE_AUTHORITY_PUBKEY": None,
            "CROSSGATE_AUTHORITY_PUBKEY_FILE": None,
        }
        world = Reviewing(mode, db, agent, config)
        if mode == "local":
            world.env = {**base, "CROSSGATE_DB": str(db), "CROSSGATE_AUTHORITY_DIR": str(KEYS)}
        else:
            served = ReviewQueue(open_store(str(db)), authority=Keyring.open(KEYS).authority())
            stack.callback(served.close)
            world.url = stack.enter_context(live_server(create_app(served, settings or server_settings())))
            # the login beats $CROSSGATE_DB: a database there would make every command fail
            world.env = {
                **base,
                "CROSSGATE_DB": str(tmp_path / "absent.db"),
                "CROSSGATE_AUTHORITY_PUBKEY_FILE": str(PIN),
            }
            world.ok("login", world.url, input=TOKEN + "\n")
        yield world


ID = re.compile(r"\b(req|rule|park)_[0-9a-f]{6,}\b")
HEX = re.compile(r"\b[0-9a-f]{64}\b")
TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
TOKEN_TEXT = re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]+")


def normalised(text: str) -> str:
    """``text`` with what differs between two databases named by order of appearance: ids, hashes, times."""
    names: dict[str, str] = {}

    def name(kind: str) -> Any:
        def replace(found: re.Match[str]) -> str:
            return names.setdefault(found[0], f"<{kind}{sum(v.startswith(f'<{kind}') for v in names.values())}>")

        return replace

    text = TOKEN_TEXT.sub("<signature>", text)
    text = ID.sub(name("id"), text)
    text = HEX.sub(name("hex"), text)
    return TIME.sub("<time>", text)

"""``AdapterContract`` over HTTP: the same scenarios, with the agent on a ``RemoteQueue`` to ``crossgate serve``.

Put :class:`OverHttp` before an adapter's contract class. Each scenario then runs a fresh ``crossgate serve``
subprocess on the scenario's store; the driver (the agent) gets a ``RemoteQueue`` with an agent token and
the server's URL in place of the store's, and a resume in another process gets that URL too, with no store
URL anywhere in its environment. The test itself plays the reviewer on the store, as the CLI does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crossgate import Policy, ReviewQueue, open_store
from crossgate.remote import TOKEN_ENV, RemoteQueue
from crossgate.testing.adapters import ASK_POLICY, DriverFactory, MakeWorld, World
from crossgate.testing.tickets import TicketStore
from tests.remote.server import AGENT_TOKEN, LiveServer

STORE_ENV = ("CROSSGATE_DB", "CROSSGATE_TEST_POSTGRES_URL")
"""What could tell an agent process where the store is; removed from the environment while a scenario runs."""


class ReviewerQueue(ReviewQueue):
    """The reviewer's queue on the scenario's store; a new policy is served by restarting the server with it."""

    server: LiveServer | None = None

    @property  # type: ignore[override]
    def policy(self) -> Policy:
        return self._served_policy

    @policy.setter
    def policy(self, value: Policy) -> None:
        self._served_policy = value
        if self.server is not None:
            self.server.set_policy(value)


class RemoteWorld(World):
    """A scenario's world whose agent reaches the queue only through ``crossgate serve``."""

    def __init__(self, make_driver: DriverFactory, workdir: Path, policy: Policy, db_url: str) -> None:
        self.db_url = db_url
        self.server = LiveServer(workdir, db_url, policy).start()
        self.queue = ReviewerQueue(open_store(db_url), policy)
        self.queue.server = self.server
        self.tickets = TicketStore(workdir / "tickets.db")
        self.tickets.seed()
        # policy_ttl 0: every read of the policy asks the server (a 304 while unchanged)
        self.remote = RemoteQueue(self.server.url, token=AGENT_TOKEN, policy_ttl_seconds=0)
        self.driver = make_driver(self.remote, self.tickets, workdir, self.server.url)  # type: ignore[arg-type]

    def close(self) -> None:
        self.remote.close()
        self.queue.close()
        self.server.stop()


class OverHttp:
    """Mixin for an ``AdapterContract`` subclass: every scenario's agent on a ``RemoteQueue``."""

    make_driver: Any

    @pytest.fixture
    def make_world(self, tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeWorld]:
        for name in STORE_ENV:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(TOKEN_ENV, AGENT_TOKEN)  # what a resume in another process authenticates with
        worlds: list[RemoteWorld] = []

        def make(policy: Policy = ASK_POLICY) -> World:
            world = RemoteWorld(self.make_driver, tmp_path, policy, database)
            worlds.append(world)
            return world

        yield make
        for world in worlds:
            world.close()

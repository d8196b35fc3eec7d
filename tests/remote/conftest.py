"""Fixtures for RemoteQueue tests: a real server on 127.0.0.1 (uvicorn in a thread) over a SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgate import ReviewQueue, open_store
from crossgate.server.app import create_app
from crossgate.server.settings import ServerSettings, agent_token, reviewer
from tests.remote.server import AGENTS, REVIEWERS
from tests.server.conftest import POLICY
from tests.server.live import live_server


def settings() -> ServerSettings:
    return ServerSettings(
        reviewers=tuple(reviewer(name, token) for name, token in REVIEWERS.items()),
        agents=tuple(agent_token(name, token) for name, token in AGENTS.items()),
        secret=b"s" * 32,
        sweep_seconds=0.2,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, ReviewQueue]]:
    """The base URL of a live server and the reviewer's queue on its store."""
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    app = create_app(queue, settings())
    with live_server(app) as url:
        yield url, queue
    queue.close()

"""Fixtures for the Strands adapter tests: a SQLite-backed queue and the seed's tickets.

Strands needs other versions of opentelemetry and mcp than Google ADK, so it has a venv of its own,
``.venv-strands`` (crossgate core, this adapter and the test tools only; see the Makefile): every test
module here starts with ``pytest.importorskip("strands")``, so the main venv skips them. Nothing here (nor
in tests/conftest.py) may import what only the main venv holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

ASK_DELETES = PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool=TOOL, reason="Deleting cannot be undone.")
ASK_POLICY = Policy(rules=(ASK_DELETES,), default=VerdictKind.ALLOW)
"""Deletes ask a person; everything else is allowed."""
REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."


@pytest.fixture
def tickets(tmp_path: Path) -> TicketStore:
    store = TicketStore(tmp_path / "tickets.db")
    store.seed()
    return store


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'crossgate.db'}"


@pytest.fixture
def make_queue(db_url: str) -> Iterator[Callable[..., ReviewQueue]]:
    """Queues on one SQLite file (as several processes would open it), closed after the test."""
    opened: list[ReviewQueue] = []

    def make(policy: Policy = ASK_POLICY) -> ReviewQueue:
        queue = ReviewQueue(open_store(db_url), policy)
        opened.append(queue)
        return queue

    yield make
    for queue in opened:
        queue.close()


@pytest.fixture
def queue(make_queue: Callable[..., ReviewQueue]) -> ReviewQueue:
    return make_queue()

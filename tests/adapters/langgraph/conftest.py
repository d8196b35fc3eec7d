"""Fixtures for the LangGraph adapter's tests: a queue, tickets, an in-memory checkpointer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from crossgate import MemoryStore, ReviewQueue
from tests.adapters.langgraph.worlds import OPS_POLICY
from tests.conformance.tickets import TicketStore


@pytest.fixture
def queue() -> Iterator[ReviewQueue]:
    """A queue with the default policy: every call asks."""
    made = ReviewQueue(MemoryStore())
    yield made
    made.close()


@pytest.fixture
def ops_queue() -> Iterator[ReviewQueue]:
    """A queue with the ops agent's policy."""
    made = ReviewQueue(MemoryStore(), OPS_POLICY)
    yield made
    made.close()


@pytest.fixture
def tickets(tmp_path: Path) -> TicketStore:
    store = TicketStore(tmp_path / "tickets.db")
    store.seed()
    return store


@pytest.fixture
def saver() -> InMemorySaver:
    return InMemorySaver()

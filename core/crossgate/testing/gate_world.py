"""The world of the gate contracts: a seeded ticket file, a SQLite store by URL, queues on it.

``ProcessContract`` and ``StoreFailureContract`` carry these fixtures themselves. An adapter's other tests
can have the same ones by importing them into their ``conftest.py``::

    from crossgate.testing.gate_world import db_url, make_queue, queue, tickets

    __all__ = ["db_url", "make_queue", "queue", "tickets"]

``queue`` asks a person for every delete and allows everything else (``GATE_POLICY``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from crossgate import Policy, ReviewQueue, VerdictKind, open_store
from crossgate.testing.adapters import ASK_DELETES, REJECTION
from crossgate.testing.contract import Contract
from crossgate.testing.driver import TicketAgentDriver
from crossgate.testing.tickets import TicketStore

__all__ = ["GATE_POLICY", "REJECTION", "GateWorld", "QueueMaker", "db_url", "make_queue", "queue", "tickets"]

GATE_POLICY = Policy(rules=(ASK_DELETES,), default=VerdictKind.ALLOW)
"""Deletes ask a person; everything else is allowed."""

QueueMaker = Callable[..., ReviewQueue]
"""The ``make_queue`` fixture: ``make_queue(policy=GATE_POLICY)``, a queue on the test's store."""


def seeded_tickets(tmp_path: Path) -> TicketStore:
    """The seed's tickets (t1, t2, t3) in a file under ``tmp_path``."""
    store = TicketStore(tmp_path / "tickets.db")
    store.seed()
    return store


def sqlite_url(tmp_path: Path) -> str:
    """The URL every process of a test opens the store by: a SQLite file under ``tmp_path``."""
    return f"sqlite:///{tmp_path / 'crossgate.db'}"


def queues_on(db_url: str) -> Iterator[QueueMaker]:
    """Queues on one store by URL (as several processes would open it), closed after the test."""
    opened: list[ReviewQueue] = []

    def make(policy: Policy = GATE_POLICY) -> ReviewQueue:
        made = ReviewQueue(open_store(db_url), policy)
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


def default_queue(make_queue: QueueMaker) -> ReviewQueue:
    """A queue on the test's store with ``GATE_POLICY``."""
    return make_queue()


tickets = pytest.fixture(seeded_tickets, name="tickets")
db_url = pytest.fixture(sqlite_url, name="db_url")
make_queue = pytest.fixture(queues_on, name="make_queue")
queue = pytest.fixture(default_queue, name="queue")


class GateWorld(Contract):
    """The base of the gate contracts: the fixtures above, and the subclass's ``driver_class``."""

    required: ClassVar[tuple[str, ...]] = ("driver_class",)
    driver_class: ClassVar[type[TicketAgentDriver]]

    tickets = pytest.fixture(staticmethod(seeded_tickets), name="tickets")
    db_url = pytest.fixture(staticmethod(sqlite_url), name="db_url")
    make_queue = pytest.fixture(staticmethod(queues_on), name="make_queue")
    queue = pytest.fixture(staticmethod(default_queue), name="queue")

    def make_driver(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> TicketAgentDriver:
        """The test's driver; override when your driver needs more than these four."""
        return self.driver_class(queue, tickets, workdir, db_url)

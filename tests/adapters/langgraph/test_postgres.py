"""PostgreSQL checkpoints: park and resume the seed graph on a real server (CROSSGATE_TEST_POSTGRES_URL)."""

from __future__ import annotations

import os
import uuid

import pytest

from crossgate import Approve, MemoryStore, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, open_checkpointer
from tests.adapters.langgraph.worlds import ticket_graph

URL = os.environ.get("CROSSGATE_TEST_POSTGRES_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not URL, reason="set CROSSGATE_TEST_POSTGRES_URL to a PostgreSQL database to run these"),
]


async def test_park_and_resume_with_postgres_checkpoints(tickets) -> None:
    assert URL is not None
    queue = ReviewQueue(MemoryStore())
    thread = f"pg-{uuid.uuid4().hex}"
    async with open_checkpointer(URL) as saver:
        graph = ticket_graph(queue, tickets, saver, [])
        parked = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread=thread)
    assert isinstance(parked, Parked)
    assert tickets.ids() == ["t1", "t2", "t3"]
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    async with open_checkpointer(URL) as saver:  # a new connection, as another process would open
        graph = ticket_graph(queue, tickets, saver, [])
        done = await Gate(queue, graph).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    queue.close()

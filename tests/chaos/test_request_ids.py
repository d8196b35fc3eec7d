"""A LangGraph process killed between request_approval's store and the checkpoint: the rerun finds the same request.

``request_approval`` stores its request, then ``interrupt()`` checkpoints the pause. A SIGKILL in between
leaves a stored request and a thread with no pause; the operator's rerun (``tests.chaos.agents.Agents.restart``:
continue the thread from its last checkpoint, or start it again) runs the node anew. The request id is the
kit's recipe over the thread, the node, its step and the call, never LangGraph's task id (which a re-created
checkpoint changes), so the rerun submits under the same id: one request, held by the parked run, and no
orphan left pending for a reviewer.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

import pytest

from crossgate import Approve, RequestStatus
from crossgate.runs import Finished, Parked
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery
from tests.chaos.agents import Agents, ChaosTickets, Kill, World, child, open_queue
from tests.chaos.loop import preload
from tests.support.postgres import database_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

RUNS = 4
AFTER_THE_REQUEST = Kill("write", 1, "after")
"""Right after the first store write of the start, the request's insert, has committed."""


@pytest.fixture(scope="module", autouse=True)
def _fork_server() -> None:
    preload()


def killed_start(world: World, run: str, ticket: str) -> int | None:
    ctx = multiprocessing.get_context("forkserver")
    started = ctx.Event()
    process = ctx.Process(target=child, args=(world, "submit", AFTER_THE_REQUEST, (run, ticket), started))
    process.start()
    process.join(120)
    return process.exitcode


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_rerun_after_a_kill_before_the_checkpoint_asks_under_the_same_request(kind: str, tmp_path: Path) -> None:
    with database_url(kind, tmp_path) as db:
        world = World("langgraph", db, str(tmp_path))
        queue, _ = open_queue(world)
        tickets = ChaosTickets(world.tickets_path)
        agents = Agents(world, queue, tickets)
        try:
            for i in range(RUNS):
                run, ticket = f"orphan-{i}", f"o{i}"
                tickets.seed([ticket])
                assert killed_start(world, run, ticket) == -9  # died by SIGKILL after the insert
                [stored] = queue.list_requests(RequestQuery(run=run, limit=MAX_PAGE_SIZE)).items
                assert stored.status is RequestStatus.PENDING
                assert not queue.parked_runs(statuses=(), run=run)  # the pause never reached the store

                parked = asyncio.run(agents.restart(run, ticket))
                assert isinstance(parked, Parked)
                assert parked.request_ids == (stored.id,)
                assert [r.id for r in queue.list_requests(RequestQuery(run=run, limit=MAX_PAGE_SIZE)).items] == [
                    stored.id
                ]
                assert tickets.delete_runs(ticket) == 0  # nothing ran while pending

                queue.decide(stored.id, Approve(), reviewer="ann")
                done = asyncio.run(agents.resume(parked.parked_run, ticket))
                assert isinstance(done, Finished)
                assert tickets.delete_runs(ticket) == 1
                assert queue.get(stored.id).status is RequestStatus.APPLIED
        finally:
            queue.close()

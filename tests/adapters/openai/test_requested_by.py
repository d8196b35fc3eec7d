"""``Gate.run(..., requested_by=)``: the person a run acts for cannot approve its calls, in this run or its resumes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from crossgate import Approve, ParkedRunStatus, Reject, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from tests.adapters.openai.conftest import REJECTION
from tests.adapters.openai.scripted import PlannedModel, delete_call, ticket_agent, tool_results
from tests.adapters.openai.test_nested import as_tool_graph
from tests.conformance.tickets import TicketStore
from tests.support.decisions import refuse_self_approval

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])


@STREAM
async def test_every_request_of_the_run_carries_who_it_acts_for(
    make_queue: Callable[..., ReviewQueue], tickets: TicketStore, stream: bool
) -> None:
    queue = make_queue()
    model = PlannedModel([[delete_call("t3")], [delete_call("t1")]], final="Done.")
    agent = ticket_agent(tickets, model)
    first = await Gate(queue).run(agent, "Delete the spam tickets.", run="for-pat", stream=stream, requested_by="pat")
    assert isinstance(first, Parked)
    [t3] = first.request_ids
    assert queue.get(t3).requested_by == "pat"
    assert queue.get_parked(first.parked_run).metadata["requested_by"] == "pat"

    refuse_self_approval(queue, t3, "pat")
    still = await Gate(queue, sdk_agent=agent).resume(first.parked_run, stream=stream)
    assert still == Parked(first.run, first.parked_run, first.request_ids), "a refused decision resumes nothing"
    assert queue.get_parked(first.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0

    queue.decide(t3, Approve(), reviewer="ann")
    # Another Gate on another queue object: who the run acts for comes from the store, not from memory.
    elsewhere = make_queue()
    second = await Gate(elsewhere, sdk_agent=ticket_agent(tickets, model)).resume(first.parked_run, stream=stream)
    assert isinstance(second, Parked)
    [t1] = second.request_ids
    assert queue.get(t1).call.args == {"id": "t1"}
    assert queue.get(t1).requested_by == "pat", "a request made after a resume still carries the run's person"
    assert tickets.delete_runs("t3") == 1

    refuse_self_approval(queue, t1, "pat")
    queue.decide(t1, Reject(message=REJECTION), reviewer="ann")
    done = await Gate(queue, sdk_agent=agent).resume(second.parked_run, stream=stream)
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 1
    assert tickets.ids() == ["t1", "t2"]
    assert tool_results(model.inputs) == ["deleted ticket t3", REJECTION]


async def test_requests_stored_for_an_inline_wait_carry_it_too(queue: ReviewQueue, tickets: TicketStore) -> None:
    model = PlannedModel([[delete_call("t3")]], final="Done.")
    agent = ticket_agent(tickets, model)
    task = asyncio.create_task(Gate(queue).run(agent, "go", run="inline", wait=5.0, requested_by="pat"))
    while not queue.pending(run="inline"):  # noqa: ASYNC110 - a reviewer polling the queue
        await asyncio.sleep(0.01)
    [request] = queue.pending(run="inline")
    assert request.requested_by == "pat"
    refuse_self_approval(queue, request.id, "pat")
    assert not task.done(), "the refused self-approval did not end the wait"
    queue.decide(request.id, Approve(), reviewer="ann")
    done = await task
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1


async def test_a_nested_as_tool_request_carries_it(queue: ReviewQueue, tickets: TicketStore) -> None:
    manager, _, _ = as_tool_graph(tickets)
    parked = await Gate(queue).run(manager, "Clean up.", run="nested-pat", requested_by="pat")
    assert isinstance(parked, Parked)
    [request] = [queue.get(r) for r in parked.request_ids]
    assert (request.call.agent, request.requested_by) == ("Cleaner", "pat")
    refuse_self_approval(queue, request.id, "pat")
    queue.decide(request.id, Approve(), reviewer="ann")
    manager2, _, _ = as_tool_graph(tickets)
    assert isinstance(await Gate(queue, sdk_agent=manager2).resume(parked.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


async def test_a_run_without_requested_by_lets_anyone_decide(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent = ticket_agent(tickets, PlannedModel([[delete_call("t3")]], final="Done."))
    parked = await Gate(queue).run(agent, "go", run="nobody")
    assert isinstance(parked, Parked)
    assert queue.get(parked.request_ids[0]).requested_by is None
    assert queue.get_parked(parked.parked_run).metadata["requested_by"] is None
    queue.decide(parked.request_ids[0], Approve(), reviewer="pat")
    assert isinstance(await Gate(queue, sdk_agent=agent).resume(parked.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


def test_resume_takes_no_requested_by() -> None:
    import inspect

    assert "requested_by" in inspect.signature(Gate.run).parameters
    assert "requested_by" not in inspect.signature(Gate.resume).parameters

"""Approvals from inside ``as_tool`` agents and from handoff targets surface as requests and resume."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Agent, handoff

from crossgate import Approve, Policy, Reject, RequestStatus, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from tests.adapters.openai.conftest import REJECTION
from tests.adapters.openai.scripted import Call, PlannedModel, delete_call, ticket_agent, tool_results
from tests.conformance.tickets import TicketStore

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])


def as_tool_graph(tickets: TicketStore) -> tuple[Agent[Any], PlannedModel, PlannedModel]:
    inner_model = PlannedModel([[delete_call("t3")]], final="Cleanup finished.")
    cleaner = ticket_agent(tickets, inner_model, name="Cleaner")
    tool = cleaner.as_tool(tool_name="clean_up", tool_description="Clean up spam tickets.")
    outer_model = PlannedModel(
        [[Call("clean_up", json.dumps({"input": "delete t3"}), "call_outer")]], final="All done."
    )
    return Agent(name="Manager", tools=[tool], model=outer_model), outer_model, inner_model


@STREAM
async def test_an_as_tool_approval_surfaces_with_the_inner_agent(
    queue: ReviewQueue, tickets: TicketStore, stream: bool
) -> None:
    manager, _, _ = as_tool_graph(tickets)
    parked = await Gate(queue).run(manager, "Clean up.", run="nested", stream=stream)
    assert isinstance(parked, Parked)
    [request] = [queue.get(r) for r in parked.request_ids]
    assert (request.call.agent, request.call.tool, request.call.args) == ("Cleaner", "delete_ticket", {"id": "t3"})
    assert request.call.call_id == "call_t3"
    assert tickets.delete_runs() == 0

    queue.decide(request.id, Approve(), reviewer="ann")
    manager2, outer_model2, inner_model2 = as_tool_graph(tickets)
    done = await Gate(queue, sdk_agent=manager2).resume(parked.parked_run, stream=stream)
    assert isinstance(done, Finished)
    assert done.result.final_output == "All done."
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    assert tool_results(inner_model2.inputs) == ["deleted ticket t3"]
    assert tool_results(outer_model2.inputs, "clean_up") == ["Cleanup finished."]
    assert queue.get(request.id).status is RequestStatus.APPLIED


async def test_an_as_tool_rejection_reaches_the_inner_model(queue: ReviewQueue, tickets: TicketStore) -> None:
    manager, _, _ = as_tool_graph(tickets)
    parked = await Gate(queue).run(manager, "Clean up.")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    manager2, _, inner_model2 = as_tool_graph(tickets)
    done = await Gate(queue, sdk_agent=manager2).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0
    assert tool_results(inner_model2.inputs) == [REJECTION]


def handoff_graph(tickets: TicketStore) -> tuple[Agent[Any], PlannedModel]:
    deleter_model = PlannedModel([[delete_call("t3")]], final="Deleted.")
    deleter = ticket_agent(tickets, deleter_model, name="Deleter")
    to_deleter = handoff(deleter)
    triage_model = PlannedModel([[Call(to_deleter.tool_name, "{}", "call_handoff")]], final="unused")
    return Agent(name="Triage", handoffs=[to_deleter], model=triage_model), deleter_model


@STREAM
async def test_a_handoff_targets_approval_surfaces_and_resumes(
    queue: ReviewQueue, tickets: TicketStore, stream: bool
) -> None:
    triage, _ = handoff_graph(tickets)
    parked = await Gate(queue).run(triage, "Delete spam.", stream=stream)
    assert isinstance(parked, Parked)
    [request] = [queue.get(r) for r in parked.request_ids]
    assert (request.call.agent, request.call.args) == ("Deleter", {"id": "t3"})
    assert queue.get_parked(parked.parked_run).metadata["agent"] == "Triage"
    assert tickets.delete_runs() == 0

    queue.decide(request.id, Approve(), reviewer="ann")
    triage2, deleter_model2 = handoff_graph(tickets)
    done = await Gate(queue, sdk_agent=triage2).resume(parked.parked_run, stream=stream)
    assert isinstance(done, Finished)
    assert done.result.last_agent.name == "Deleter"
    assert done.result.final_output == "Deleted."
    assert tickets.ids() == ["t1", "t2"]
    assert tool_results(deleter_model2.inputs) == ["deleted ticket t3"]


@STREAM
async def test_an_approved_as_tool_call_continues_its_inner_run_after_an_inner_approval(
    make_queue: Any, tickets: TicketStore, stream: bool
) -> None:
    queue = make_queue(Policy())  # every call asks, the agent tool itself too
    manager, _, _ = as_tool_graph(tickets)
    outcome = await Gate(queue).run(manager, "Clean up.", stream=stream)
    asked = []
    while isinstance(outcome, Parked):
        for request in (queue.get(r) for r in outcome.request_ids):
            asked.append((request.call.agent, request.call.tool))
            queue.decide(request.id, Approve(), reviewer="ann")
        manager, outer_model, inner_model = as_tool_graph(tickets)  # as a fresh process would build it
        outcome = await Gate(queue, sdk_agent=manager).resume(outcome.parked_run, stream=stream)
    assert asked == [("Manager", "clean_up"), ("Cleaner", "delete_ticket")]
    assert outcome.result.final_output == "All done."
    assert tickets.delete_runs("t3") == 1
    assert tool_results(inner_model.inputs) == ["deleted ticket t3"]
    assert tool_results(outer_model.inputs, "clean_up") == ["Cleanup finished."]

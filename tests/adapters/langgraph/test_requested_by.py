"""``requested_by``: the person a run acts for cannot approve its calls, in graphs and agents, in any resume."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from crossgate import (
    AdapterError,
    Approve,
    ConfigurationError,
    ParkedRunStatus,
    Reject,
    ReviewQueue,
)
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, request_approval
from crossgate_langgraph._parking import thread_config
from crossgate_langgraph.testing import ScriptedChatModel
from tests.adapters.langgraph.worlds import SQL, WRITE, OpsTools, ops_agent
from tests.conformance.tickets import TicketStore
from tests.support.decisions import refuse_self_approval

REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."


class Deletes(TypedDict, total=False):
    outcomes: list[str]


def two_deletes(queue: ReviewQueue, tickets: TicketStore, saver: Any, *, first_names: str | None = None) -> Any:
    """Delete t3, then (in the next node, so after a resume) t1; each node asks crossgate first.

    ``first_names`` is the ``requested_by`` the first node passes itself (None: it leaves it to the gate).
    """

    def delete(ticket: str, requested_by: str | None) -> Any:
        def node(state: Deletes) -> Deletes:
            decision = request_approval(queue, "delete_ticket", {"id": ticket}, requested_by=requested_by)
            done = tickets.delete(ticket) if isinstance(decision, Approve) else f"not deleted: {ticket}"
            return {"outcomes": [*state.get("outcomes", []), done]}

        return node

    builder = StateGraph(Deletes)
    builder.add_node("delete_t3", delete("t3", first_names))
    builder.add_node("delete_t1", delete("t1", None))
    builder.add_edge(START, "delete_t3")
    builder.add_edge("delete_t3", "delete_t1")
    builder.add_edge("delete_t1", END)
    return builder.compile(checkpointer=saver, name="two-deletes")


async def test_a_graphs_requests_carry_it_through_resumes(
    queue: ReviewQueue, tickets: TicketStore, saver: InMemorySaver
) -> None:
    graph = two_deletes(queue, tickets, saver)
    first = await Gate(queue, graph).run(graph, {}, thread="g", requested_by="pat")
    assert isinstance(first, Parked)
    [t3] = first.request_ids
    assert queue.get(t3).requested_by == "pat", "the node's request_approval got it from the gate"
    assert queue.get_parked(first.parked_run).metadata["requested_by"] == "pat"

    refuse_self_approval(queue, t3, "pat")
    assert await Gate(queue, graph).resume(first.parked_run) == first
    assert queue.get_parked(first.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0

    queue.decide(t3, Approve(), reviewer="ann")
    # A fresh gate and graph on the same checkpointer: the person comes from the parked run.
    rebuilt = two_deletes(queue, tickets, saver)
    second = await Gate(queue, rebuilt).resume(first.parked_run)
    assert isinstance(second, Parked)
    [t1] = second.request_ids
    assert queue.get(t1).call.args == {"id": "t1"}
    assert queue.get(t1).requested_by == "pat", "the request made after the resume carries it too"
    assert tickets.delete_runs("t3") == 1

    refuse_self_approval(queue, t1, "pat")
    queue.decide(t1, Reject(message=REJECTION), reviewer="ann")
    done = await Gate(queue, rebuilt).resume(second.parked_run)
    assert isinstance(done, Finished)
    assert done.result["outcomes"] == ["deleted ticket t3", "not deleted: t1"]
    assert tickets.delete_runs() == 1


async def test_a_node_may_name_the_person_when_the_gate_does_not(
    queue: ReviewQueue, tickets: TicketStore, saver: InMemorySaver
) -> None:
    graph = two_deletes(queue, tickets, saver, first_names="pat")
    first = await Gate(queue, graph).run(graph, {}, thread="n")
    assert isinstance(first, Parked)
    assert queue.get(first.request_ids[0]).requested_by == "pat"
    # The parked run keeps whom the stored request names, so the next node's request carries it too.
    assert queue.get_parked(first.parked_run).metadata["requested_by"] == "pat"
    queue.decide(first.request_ids[0], Approve(), reviewer="ann")
    second = await Gate(queue, graph).resume(first.parked_run)
    assert isinstance(second, Parked)
    assert queue.get(second.request_ids[0]).requested_by == "pat"
    refuse_self_approval(queue, second.request_ids[0], "pat")


async def test_a_node_naming_someone_else_than_the_gate_is_refused(
    queue: ReviewQueue, tickets: TicketStore, saver: InMemorySaver
) -> None:
    graph = two_deletes(queue, tickets, saver, first_names="sam")
    with pytest.raises(ConfigurationError, match="runs for 'pat'"):
        await Gate(queue, graph).run(graph, {}, thread="x", requested_by="pat")
    assert queue.list_requests().items == []
    assert tickets.delete_runs() == 0


async def test_request_approval_outside_a_gate_and_park_keep_the_stored_person(
    queue: ReviewQueue, tickets: TicketStore, saver: InMemorySaver
) -> None:
    graph = two_deletes(queue, tickets, saver)
    # Paused without a gate (or a gate that died before parking): the config names the person.
    await graph.ainvoke({}, thread_config("p", "pat"))
    [request] = queue.pending()
    assert request.requested_by == "pat"
    gate = Gate(queue, graph)
    with pytest.raises(AdapterError, match="several people"):
        await gate.park(graph, thread="p", requested_by="sam")
    assert queue.parked_runs() == []
    parked = await gate.park(graph, thread="p")
    assert isinstance(parked, Parked)
    assert queue.get_parked(parked.parked_run).metadata["requested_by"] == "pat"
    queue.decide(request.id, Approve(), reviewer="ann")
    second = await gate.resume(parked.parked_run)
    assert isinstance(second, Parked)
    assert queue.get(second.request_ids[0]).requested_by == "pat"


def two_turn_model() -> ScriptedChatModel:
    """Turn 1 writes a file, turn 2 runs SQL: each pauses on its own, the second after a resume."""
    return ScriptedChatModel(
        turns=[AIMessage(content="", tool_calls=[WRITE]), AIMessage(content="", tool_calls=[SQL])], final="Done."
    )


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_an_agents_requests_carry_it_through_resumes(
    ops_queue: ReviewQueue, saver: InMemorySaver, mode: str
) -> None:
    tools, model = OpsTools(), two_turn_model()
    agent = ops_agent(ops_queue, tools, model, saver, mode)
    first = await Gate(ops_queue, agent).run(agent, {"messages": [("user", "go")]}, thread="a", requested_by="pat")
    assert isinstance(first, Parked)
    [write] = first.request_ids
    assert ops_queue.get(write).requested_by == "pat"
    refuse_self_approval(ops_queue, write, "pat")
    assert await Gate(ops_queue, agent).resume(first.parked_run) == first
    assert tools.ran == []

    ops_queue.decide(write, Approve(), reviewer="ann")
    rebuilt = ops_agent(ops_queue, tools, model, saver, mode)
    second = await Gate(ops_queue, rebuilt).resume(first.parked_run)
    assert isinstance(second, Parked)
    [sql] = second.request_ids
    assert ops_queue.get(sql).call.tool == "execute_sql"
    assert ops_queue.get(sql).requested_by == "pat", "the second turn's request, made after the resume"
    refuse_self_approval(ops_queue, sql, "pat")
    ops_queue.decide(sql, Approve(), reviewer="ann")
    done = await Gate(ops_queue, rebuilt).resume(second.parked_run)
    assert isinstance(done, Finished)
    assert tools.names() == ["write_file", "execute_sql"]
    told = [m.content for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert told == ["wrote 5 bytes to report.txt", "1 row affected"]


def test_resume_takes_no_requested_by() -> None:
    import inspect

    assert "requested_by" in inspect.signature(Gate.run).parameters
    assert "requested_by" in inspect.signature(request_approval).parameters
    assert "requested_by" not in inspect.signature(Gate.resume).parameters

"""Attacks on what a parked thread resumes from: its checkpoint, which the agent can write like crossgate's store.

The agent overwrites the parked checkpoint in place (same id, so the thread has not "moved on"), with the
approved call renamed to another tool of the same schema, or with other arguments, in the model's message
and in the tool node's input alike.

Both flavours were safe before ``tool=`` was passed. The agent middleware finds a request by thread, turn
and call id, and refuses a reviewed call of another tool before the kit's check (the model reads why).
A graph's ``request_approval`` names the tool in its request id, and LangGraph validates the resume value
against the node's call fingerprint (tool and arguments): the answer is refused, the resume fails and the
parked run is marked failed. No answer reaches the model there, since a rejection is validated the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from crossgate import (
    AdapterError,
    Approve,
    FingerprintMismatchError,
    MemoryStore,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware, gated_tool_wrapper, open_checkpointer, tool_calls_router
from crossgate_langgraph.testing import ScriptedChatModel, recorded_inputs, tool_call
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

READ = "read_ticket"
ASK_ALL = Policy(rules=(PolicyRule(name="ask-all", verdict=VerdictKind.ASK),), default=VerdictKind.ALLOW)


def ticket_tools(tickets: TicketStore, reads: list[str]) -> list[BaseTool]:
    """``read_ticket(id)`` and ``delete_ticket(id)``: the same schema."""

    def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        reads.append(id)
        return f"ticket {id}"

    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return tickets.delete(id)

    return [StructuredTool.from_function(read_ticket), StructuredTool.from_function(delete_ticket, name=TOOL)]


def build(kind: str, queue: ReviewQueue, tools: list[BaseTool], model: ScriptedChatModel, saver: Any) -> Any:
    if kind == "langchain":
        middleware = crossgate_middleware(queue, tools)
        return create_agent(model, tools, middleware=middleware, checkpointer=saver, name="tickets-agent")

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools, wrap_tool_call=gated_tool_wrapper(queue)))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tool_calls_router("tools"), ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver, name="tickets-graph")


class Scene:
    """One agent of ``kind`` whose model makes one call, ``tool(args)``, on a SQLite checkpointer."""

    def __init__(self, kind: str, tmp_path: Path, tickets: TicketStore, tool: str, args: dict[str, Any]) -> None:
        self.kind, self.tickets, self.reads = kind, tickets, list[str]()
        self.queue = ReviewQueue(MemoryStore(), ASK_ALL)
        self.checkpoints = str(tmp_path / f"{kind}-checkpoints.db")
        self.record = tmp_path / f"{kind}-inputs.jsonl"
        self.first = AIMessage(content="", tool_calls=[tool_call(tool, args, "call_1")])

    @asynccontextmanager
    async def gate(self) -> AsyncIterator[tuple[Gate, Any]]:
        model = ScriptedChatModel(turns=[self.first], record_to=self.record)
        async with open_checkpointer(self.checkpoints) as saver:
            graph = build(self.kind, self.queue, ticket_tools(self.tickets, self.reads), model, saver)
            yield Gate(self.queue, graph), graph

    async def park_approved(self, run: str) -> tuple[str, str]:
        async with self.gate() as (gate, graph):
            parked = await gate.run(graph, {"messages": [HumanMessage("go")]}, thread=run)
        assert isinstance(parked, Parked), parked
        [request_id] = parked.request_ids
        self.queue.decide(request_id, Approve(), reviewer="ann")
        return parked.parked_run, request_id

    async def rewrite_call(self, run: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Overwrite the thread's latest checkpoint in place with its model call changed by ``change``."""
        async with open_checkpointer(self.checkpoints) as saver:
            latest = await saver.aget_tuple({"configurable": {"thread_id": run}})
            assert latest is not None and latest.parent_config is not None
            values = latest.checkpoint["channel_values"]
            [message] = [m for m in values["messages"] if isinstance(m, AIMessage)]
            [send] = values["__pregel_tasks"]  # the tool node's input: the call, sent to it by the router
            for call in (message.tool_calls[0], send.arg[0]):
                change(call)
            await saver.aput(latest.parent_config, latest.checkpoint, latest.metadata, {})
            again = await saver.aget_tuple({"configurable": {"thread_id": run}})
            assert again is not None and again.checkpoint["id"] == latest.checkpoint["id"]
            assert again.checkpoint["channel_values"] == values

    async def resume(self, parked_run: str) -> Any:
        async with self.gate() as (gate, _):
            return await gate.resume(parked_run)

    def told(self, run: str) -> list[str]:
        inputs = recorded_inputs(self.record, run)
        return [str(m.content) for m in inputs[-1] if isinstance(m, ToolMessage)] if len(inputs) > 1 else []

    def refusals(self, request_id: str) -> list[str]:
        return [str(e.payload["error"]) for e in self.queue.events(request_id=request_id) if e.kind == "not_run"]


async def test_agent_a_call_renamed_in_the_checkpoint_is_refused_and_the_model_told(
    tmp_path: Path, tickets: TicketStore
) -> None:
    scene = Scene("langchain", tmp_path, tickets, READ, {"id": "t3"})
    parked_run, request_id = await scene.park_approved("run-swap")
    await scene.rewrite_call("run-swap", lambda call: call.update(name=TOOL))

    assert isinstance(await scene.resume(parked_run), Finished)

    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"
    assert scene.reads == []
    error = f"the reviewed call was {READ}; refusing to run {TOOL} in its place"
    assert scene.told("run-swap") == [f"Not run: {error}."]
    assert scene.refusals(request_id) == [error]


async def test_agent_a_calls_arguments_rewritten_in_the_checkpoint_are_refused_and_the_model_told(
    tmp_path: Path, tickets: TicketStore
) -> None:
    scene = Scene("langchain", tmp_path, tickets, TOOL, {"id": "t3"})
    parked_run, request_id = await scene.park_approved("run-args")
    await scene.rewrite_call("run-args", lambda call: call.update(args={"id": "t1"}))

    assert isinstance(await scene.resume(parked_run), Finished)

    assert tickets.delete_runs() == 0
    told = scene.told("run-args")
    assert len(told) == 1 and "reviewed for other arguments" in told[0], told
    assert scene.refusals(request_id) == told


@pytest.mark.parametrize(
    ("tool", "change", "refusal"),
    [
        (READ, {"name": TOOL}, "the decision names other arguments than the ones this node is about to run"),
        (TOOL, {"args": {"id": "t1"}}, "exists for other arguments of delete_ticket; refusing to reuse it"),
    ],
    ids=["renamed", "other-arguments"],
)
async def test_graph_a_call_rewritten_in_the_checkpoint_fails_the_resume_and_runs_nothing(
    tmp_path: Path, tickets: TicketStore, tool: str, change: dict[str, Any], refusal: str
) -> None:
    scene = Scene("langgraph", tmp_path, tickets, tool, {"id": "t3"})
    parked_run, request_id = await scene.park_approved("run-graph")
    await scene.rewrite_call("run-graph", lambda call: call.update(change))

    with pytest.raises((AdapterError, FingerprintMismatchError), match=refusal):
        await scene.resume(parked_run)

    assert tickets.delete_runs() == 0
    assert scene.reads == []
    assert scene.queue.get(request_id).status is RequestStatus.DECIDED, "the approval was not used up"
    failed = scene.queue.get_parked(parked_run)
    assert failed.status is ParkedRunStatus.FAILED
    assert failed.outcome is not None and refusal in failed.outcome

"""LangGraph and LangChain ticket drivers for ``AdapterContract`` (``crossgate.testing.TicketAgentDriver``).

``LangGraphTicketDriver``: a hand-built graph (model node, ``ToolNode`` with crossgate's tool wrapper).
``LangChainTicketDriver``: ``create_agent`` with ``crossgate_middleware`` (per_call mode).
Both use a scripted model that asks for one delete per turn, read from the task text, so any process
rebuilds the same agent; checkpoints, the policy and the model's recorded inputs live under ``workdir``.

Run as ``python -c '...main()' resume --kind K --db URL --tickets PATH --workdir DIR [--lease S] PARKED_RUN``.
With ``$CG_TEST_KILL_IN_TOOL`` set to ``before`` or ``after``, the delete tool SIGKILLs its own process
before or after it deletes (a resumer dying inside the tool); with ``$CG_TEST_KILL_IN_MODEL`` set to
``after-tool``, the model does in the turn after a tool result. ``crossgate worker --app
tests.adapters.langgraph.driver:worker_resumer`` resumes both kinds, with ``$CG_TEST_TICKETS`` and
``$CG_TEST_WORKDIR`` naming the files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from crossgate import DecisionKind, Policy, ReviewQueue, open_queue
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL, TicketAgentDriver
from crossgate_langgraph import Gate, crossgate_middleware, gated_tool_wrapper, open_checkpointer, tool_calls_router
from crossgate_langgraph.testing import ScriptedChatModel, recorded_inputs, tool_call

ROOT = Path(__file__).resolve().parents[3]
TASK_PREFIX = "Delete these spam tickets:"


def task_text(ticket_ids: Sequence[object]) -> str:
    """The task naming the tickets; an id that is not a string (a number, a bool) is written as JSON."""
    return f"{TASK_PREFIX} {' '.join(i if isinstance(i, str) else json.dumps(i) for i in ticket_ids)}"


def _ticket_id(token: str) -> object:
    try:
        value = json.loads(token)
    except ValueError:
        return token
    return token if isinstance(value, str) else value


def ticket_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """One delete per turn, in the order the task lists them; a final text once each was answered.

    Ids are sent as the task wrote them: ``t3`` as a string, ``5`` or ``true`` as a number or a bool
    (a model sending the wrong type).
    """
    task = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
    ids = [_ticket_id(t) for t in task.removeprefix(TASK_PREFIX).split()]
    answered = sum(1 for m in messages if isinstance(m, ToolMessage) and m.name == TOOL)
    if answered and os.environ.get("CG_TEST_KILL_IN_MODEL") == "after-tool":
        os.kill(os.getpid(), signal.SIGKILL)  # a resumer dying in the model turn after the tool step
    if answered < len(ids):
        ticket = ids[answered]
        return AIMessage(content="", tool_calls=[tool_call(TOOL, {"id": ticket}, f"call_{answered}_{ticket}")])
    return AIMessage(content="All requested tickets were handled.")


def delete_tool(tickets: TicketStore) -> BaseTool:
    """The gated tool: ``tickets.delete``."""

    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        kill = os.environ.get("CG_TEST_KILL_IN_TOOL")
        if kill == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = tickets.delete(id)
        if kill == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    return StructuredTool.from_function(delete_ticket, name=TOOL)


def tool_results_from(path: Path, run: str) -> list[str]:
    """What the model was told for each delete, read from the last input it received in ``run``."""
    inputs = recorded_inputs(path, run)
    if not inputs:
        return []
    return [str(m.content) for m in inputs[-1] if isinstance(m, ToolMessage) and m.name == TOOL]


class _TicketDriver(TicketAgentDriver):
    kind: ClassVar[str]
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(DecisionKind)

    def __init__(
        self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str, *, lease_seconds: float = 300.0
    ) -> None:
        super().__init__(queue, tickets, workdir, db_url)
        self.lease_seconds = lease_seconds
        self.checkpoints = workdir / f"{self.kind}-checkpoints.db"
        self.record = workdir / f"{self.kind}-model-inputs.jsonl"

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(reply=ticket_reply, record_to=self.record)

    def build(self, saver: Any) -> Any:
        raise NotImplementedError

    @asynccontextmanager
    async def gate(self) -> AsyncIterator[tuple[Gate, Any]]:
        async with open_checkpointer(str(self.checkpoints)) as saver:
            graph = self.build(saver)
            yield Gate(self.queue, graph, lease_seconds=self.lease_seconds), graph

    async def start(
        self, ticket_ids: Sequence[str], *, run: str, requested_by: str | None = None
    ) -> Finished[object] | Parked:
        self.workdir.joinpath(f"{self.kind}-policy.json").write_text(self.queue.policy.model_dump_json())
        task = task_text(ticket_ids)
        async with self.gate() as (gate, graph):
            return await gate.run(graph, {"messages": [HumanMessage(task)]}, thread=run, requested_by=requested_by)

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        async with self.gate() as (gate, _):
            return await gate.resume(parked_run)

    def resume_command(self, parked_run: str, *, lease_seconds: float | None = None) -> list[str]:
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.langgraph.driver import main; main()"
        )
        return [
            sys.executable,
            "-c",
            code,
            "resume",
            "--kind",
            self.kind,
            "--db",
            self.db_url,
            "--tickets",
            str(self.tickets.path),
            "--workdir",
            str(self.workdir),
            "--lease",
            str(lease_seconds or self.lease_seconds),
            parked_run,
        ]

    def tool_results(self, run: str) -> list[str]:
        return tool_results_from(self.record, run)


class LangGraphTicketDriver(_TicketDriver):
    """The delete-ticket agent as a plain LangGraph graph whose ``ToolNode`` asks crossgate."""

    framework: ClassVar[str] = "langgraph"
    kind: ClassVar[str] = "langgraph"

    def build(self, saver: Any) -> Any:
        model = self.model()

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        tools = ToolNode([delete_tool(self.tickets)], wrap_tool_call=gated_tool_wrapper(self.queue))
        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", tools)
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", tool_calls_router("tools"), ["tools", END])
        builder.add_edge("tools", "model")
        return builder.compile(checkpointer=saver, name="tickets-graph")


class LangChainTicketDriver(_TicketDriver):
    """The delete-ticket agent as ``create_agent`` with crossgate's middleware in per_call mode."""

    framework: ClassVar[str] = "langchain"
    kind: ClassVar[str] = "langchain"

    def build(self, saver: Any) -> Any:
        tools = [delete_tool(self.tickets)]
        middleware = crossgate_middleware(self.queue, tools)
        return create_agent(self.model(), tools, middleware=middleware, checkpointer=saver, name="tickets-agent")


DRIVERS: dict[str, type[_TicketDriver]] = {"langgraph": LangGraphTicketDriver, "langchain": LangChainTicketDriver}


class WorkerResumer:
    """What ``crossgate worker --app ...:worker_resumer`` drives: both ticket agents behind one gate."""

    framework = "langgraph"

    def __init__(self, queue: ReviewQueue) -> None:
        self.queue = queue
        self.tickets = TicketStore(Path(os.environ["CG_TEST_TICKETS"]))
        self.workdir = Path(os.environ["CG_TEST_WORKDIR"])

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        parked = self.queue.get_parked(parked_run)
        kind = "langchain" if parked.metadata.get("graph") == "tickets-agent" else "langgraph"
        driver = DRIVERS[kind](self.queue, self.tickets, self.workdir, "")
        return await driver.resume(parked_run)


def worker_resumer(queue: ReviewQueue) -> WorkerResumer:
    """The worker's ``--app`` entry point."""
    return WorkerResumer(queue)


def main(argv: Sequence[str] | None = None) -> None:
    """Resume a parked run in this process; print the outcome; exit 0 when it finished or parked."""
    parser = argparse.ArgumentParser(prog="langgraph-ticket-driver")
    parser.add_argument("command", choices=["resume"])
    parser.add_argument("--kind", choices=sorted(DRIVERS), required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--tickets", required=True, type=Path)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--lease", type=float, default=300.0)
    parser.add_argument("parked_run")
    args = parser.parse_args(argv)
    policy_file = args.workdir / f"{args.kind}-policy.json"
    policy = Policy.model_validate_json(policy_file.read_text()) if policy_file.exists() else None
    queue = open_queue(args.db, policy=policy)  # a store's URL, or a review server's (RemoteQueue)
    try:
        driver = DRIVERS[args.kind](queue, TicketStore(args.tickets), args.workdir, args.db, lease_seconds=args.lease)
        outcome = asyncio.run(driver.resume(args.parked_run))
    finally:
        queue.close()
    if isinstance(outcome, Finished):
        print(f"finished {outcome.run}")
    else:
        print(f"parked {outcome.parked_run} {' '.join(outcome.request_ids)}")

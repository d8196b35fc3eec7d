"""The three agents the chaos loop kills, and the process body it kills them in.

Each agent makes one gated call, ``delete_ticket {"id": <ticket>}``, whose body is ``TicketStore.delete``:
every execution is a row in the tickets file, so any process can count how often a call's tool ran.

- ``openai``: the OpenAI Agents SDK agent on a scripted ``Model``, behind ``crossgate_openai.Gate``.
- ``langgraph``: a LangGraph graph whose node asks ``request_approval`` (an ``interrupt()``), then deletes.
- ``langchain``: ``create_agent`` with ``crossgate_middleware`` on a scripted chat model.

A process dies by SIGKILL at a chosen point (:class:`Kill`): right before or right after the n-th write
to the store, or inside the tool, before or after its side effect. The loop kills at random moments
from outside too; that needs nothing here but :func:`child` setting ``started``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents import set_tracing_disabled
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from crossgate import Approve, Policy, Reject, ReviewQueue, open_store
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate as GraphGate
from crossgate_langgraph import crossgate_middleware, open_checkpointer
from crossgate_langgraph.testing import ScriptedChatModel
from crossgate_openai import Gate as OpenAIGate
from tests.adapters.langgraph.driver import TASK_PREFIX, delete_tool, ticket_reply
from tests.adapters.langgraph.worlds import ticket_graph
from tests.adapters.openai.scripted import PlannedModel, delete_call, ticket_agent
from tests.conformance.tickets import TicketStore

set_tracing_disabled(True)

ADAPTERS = ("openai", "langgraph", "langchain")
Adapter = Literal["openai", "langgraph", "langchain"]
Outcome = Finished[Any] | Parked

POLICY = Policy()
"""Every call asks."""

WRITES = frozenset(
    {
        "insert_request",
        "update_request",
        "insert_rule",
        "revoke_rule",
        "insert_parked_run",
        "change_parked_run",
        "change_parked_runs",
        "append_event",
    }
)
"""The store's methods that write."""


@dataclass(frozen=True, slots=True)
class Kill:
    """Where a process dies: at its ``nth`` store write or in the tool, ``before`` or ``after`` it."""

    at: Literal["write", "tool", "never"] = "never"
    nth: int = 0
    when: Literal["before", "after"] = "before"


NEVER = Kill()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillingStore:
    """Delegates to a real store, counts its writes, and dies by SIGKILL at the write ``kill`` names."""

    def __init__(self, inner: Any, kill: Kill = NEVER) -> None:
        self.inner = inner
        self.kill = kill
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            armed = self.kill.at == "write" and self.writes == self.kill.nth
            if armed and self.kill.when == "before":
                die()
            result = attr(*args, **kwargs)
            if armed:
                die()  # committed, and the caller never hears of it
            return result

        return write


class ChaosTickets(TicketStore):
    """The tickets file; ``delete`` (the tool body) dies before or after its side effect when told to."""

    def __init__(self, path: Path, kill: Kill = NEVER) -> None:
        super().__init__(path)
        self.kill = kill

    def delete(self, ticket_id: str) -> str:
        if self.kill.at == "tool" and self.kill.when == "before":
            die()
        result = super().delete(ticket_id)
        if self.kill.at == "tool":
            die()
        return result


@dataclass(frozen=True, slots=True)
class World:
    """Everything a process needs to rebuild an agent: plain values, so it crosses to a child process."""

    adapter: Adapter
    db: str
    workdir: str
    lease_seconds: float = 0.5

    @property
    def tickets_path(self) -> Path:
        return Path(self.workdir) / "tickets.db"

    @property
    def checkpoints(self) -> str:
        return str(Path(self.workdir) / f"{self.adapter}-checkpoints.db")


class Agents:
    """The world's agent, run and resumed through its adapter's gate in this process."""

    def __init__(self, world: World, queue: ReviewQueue, tickets: TicketStore) -> None:
        self.world = world
        self.queue = queue
        self.tickets = tickets

    @asynccontextmanager
    async def graph(self) -> AsyncIterator[tuple[GraphGate, Any]]:
        async with open_checkpointer(self.world.checkpoints) as saver:
            if self.world.adapter == "langgraph":
                graph = ticket_graph(self.queue, self.tickets, saver, [])
            else:
                tools = [delete_tool(self.tickets)]
                model = ScriptedChatModel(reply=ticket_reply)
                middleware = crossgate_middleware(self.queue, tools)
                graph = create_agent(model, tools, middleware=middleware, checkpointer=saver, name="chaos-agent")
            yield GraphGate(self.queue, graph, lease_seconds=self.world.lease_seconds), graph

    def openai_gate(self, ticket: str) -> tuple[OpenAIGate, Any]:
        agent = ticket_agent(self.tickets, PlannedModel([[delete_call(ticket)]]))
        return OpenAIGate(self.queue, sdk_agent=agent, lease_seconds=self.world.lease_seconds), agent

    async def start(self, run: str, ticket: str) -> Outcome:
        """Start ``run``, whose model asks to delete ``ticket``; it parks on that call."""
        if self.world.adapter == "openai":
            openai, agent = self.openai_gate(ticket)
            return await openai.run(agent, f"Delete ticket {ticket}.", run=run)
        async with self.graph() as (gate, graph):
            return await gate.run(graph, self.graph_input(ticket), thread=run)

    def graph_input(self, ticket: str) -> Any:
        if self.world.adapter == "langgraph":
            return {"ticket_id": ticket}
        return {"messages": [HumanMessage(f"{TASK_PREFIX} {ticket}")]}

    async def restart(self, run: str, ticket: str) -> Outcome | None:
        """What the operator does for a run whose start was killed; None when it had parked already.

        A LangGraph thread that paused but was never parked is parked (``Gate.park``, safe to repeat); one
        that died mid-step goes on from its last checkpoint (input ``None``, LangGraph's way to continue a
        thread after a failure), so the re-run node runs at the same step and asks under the same request
        id; only a thread with no checkpoint, and anything else (an OpenAI run, whose state lived in the
        dead process), starts again from the beginning.
        """
        if self.queue.parked_runs(statuses=(), run=run):
            return None
        if self.world.adapter == "openai":
            return await self.start(run, ticket)
        async with self.graph() as (gate, graph):
            snapshot = await graph.aget_state({"configurable": {"thread_id": run}})
            if snapshot.interrupts:
                return await gate.park(graph, thread=run)
            # A step whose tasks all saved their writes before the next checkpoint has no ``next`` but
            # still has its tasks: it died mid-step too. Sending the input again would start a new run.
            if snapshot.next or snapshot.tasks:
                return await gate.run(graph, None, thread=run)
            return await gate.run(graph, self.graph_input(ticket), thread=run)

    async def resume(self, parked_run: str, ticket: str) -> Outcome:
        """Resume a parked run through the adapter's ``resume``."""
        if self.world.adapter == "openai":
            openai, agent = self.openai_gate(ticket)
            return await openai.resume(parked_run, sdk_agent=agent)
        async with self.graph() as (gate, _):
            return await gate.resume(parked_run)


def open_queue(world: World, kill: Kill = NEVER) -> tuple[ReviewQueue, KillingStore]:
    store = KillingStore(open_store(world.db), kill)
    return ReviewQueue(store, POLICY), store


def child(world: World, phase: str, kill: Kill, args: tuple[str, ...], started: Any) -> None:
    """The body of a process the loop kills: one phase (``submit``, ``decide`` or ``resume``) of one run."""
    queue, _ = open_queue(world, kill)
    tickets = ChaosTickets(world.tickets_path, kill)
    agents = Agents(world, queue, tickets)
    started.set()
    try:
        if phase == "submit":
            run, ticket = args
            asyncio.run(agents.start(run, ticket))
        elif phase == "decide":
            request_id, verdict = args
            decision = Approve() if verdict == "approve" else Reject(message="Keep this ticket.")
            queue.decide(request_id, decision, reviewer="ann")
        else:
            parked_run, ticket = args
            asyncio.run(agents.resume(parked_run, ticket))
    finally:
        queue.close()

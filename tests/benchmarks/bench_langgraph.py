"""Round trip of one approval: crossgate's gate against LangGraph's and LangChain's native interrupt and resume.

    .venv/bin/python tests/benchmarks/bench_langgraph.py [--n 50]

A round trip is: run a fresh thread until it pauses, decide, resume it to the end. Native runs answer the
interrupt directly with ``Command(resume={id: ...})``; crossgate runs park (submit the request, store the
parked run), record the decision in the queue, then resume through ``Gate.resume`` (claim, checks, answer,
mark applied, finish). All cases run in the same process, interleaved, so the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from crossgate import Approve, MemoryStore, ReviewQueue, open_store
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware, open_checkpointer, request_approval
from crossgate_langgraph.testing import ScriptedChatModel, tool_call

RoundTrip = Callable[[str], Awaitable[None]]


class State(TypedDict, total=False):
    ticket_id: str
    outcome: str


def native_graph(saver: Any) -> Any:
    def node(state: State) -> State:
        answer = interrupt({"tool": "delete_ticket", "args": {"id": state["ticket_id"]}})
        return {"outcome": "deleted" if answer is True else "kept"}

    return _single(node, saver, "native")


def crossgate_graph(queue: ReviewQueue, saver: Any) -> Any:
    def node(state: State) -> State:
        decision = request_approval(queue, "delete_ticket", {"id": state["ticket_id"]})
        return {"outcome": "deleted" if isinstance(decision, Approve) else "kept"}

    return _single(node, saver, "crossgate")


def _single(node: Any, saver: Any, name: str) -> Any:
    builder = StateGraph(State)
    builder.add_node("delete_ticket", node)
    builder.add_edge(START, "delete_ticket")
    builder.add_edge("delete_ticket", END)
    return builder.compile(checkpointer=saver, name=name)


@tool
def write_file(path: str, content: str) -> str:
    """Write content to a file."""
    return f"wrote {path}"


def agent_model() -> ScriptedChatModel:
    call = tool_call("write_file", {"path": "report.txt", "content": "hello"}, "call_write")
    return ScriptedChatModel(turns=[AIMessage(content="", tool_calls=[call])])


def native_graph_trip(graph: Any) -> RoundTrip:
    async def trip(thread: str) -> None:
        config = {"configurable": {"thread_id": thread}}
        paused = await graph.ainvoke({"ticket_id": "t3"}, config, version="v2")
        [pending] = paused.interrupts
        done = await graph.ainvoke(Command(resume={pending.id: True}), config, version="v2")
        assert done.value["outcome"] == "deleted"

    return trip


def gate_trip(queue: ReviewQueue, graph: Any, first_input: Any) -> RoundTrip:
    gate = Gate(queue, graph)

    async def trip(thread: str) -> None:
        parked = await gate.run(graph, first_input, thread=thread)
        assert isinstance(parked, Parked)
        for request_id in parked.request_ids:
            queue.decide(request_id, Approve(), reviewer="bench")
        done = await gate.resume(parked.parked_run)
        assert isinstance(done, Finished)

    return trip


def native_agent_trip(agent: Any) -> RoundTrip:
    async def trip(thread: str) -> None:
        config = {"configurable": {"thread_id": thread}}
        paused = await agent.ainvoke({"messages": [("user", "go")]}, config, version="v2")
        answers = {i.id: {"type": "approve"} for i in paused.interrupts}
        await agent.ainvoke(Command(resume=answers), config, version="v2")

    return trip


async def measure(trip: RoundTrip, label: str, n: int, warmup: int) -> list[float]:
    for i in range(warmup):
        await trip(f"{label}-warm-{i}")
    times = []
    for i in range(n):
        start = time.perf_counter()
        await trip(f"{label}-{i}")
        times.append((time.perf_counter() - start) * 1000)
    return times


async def bench(n: int, warmup: int, folder: Path) -> dict[str, list[float]]:
    memory_queue = ReviewQueue(MemoryStore())
    sqlite_queue = ReviewQueue(open_store(str(folder / "crossgate.db")))
    tools = [write_file]
    results: dict[str, list[float]] = {}
    async with open_checkpointer(str(folder / "checkpoints.db")) as sqlite_saver:
        cases: dict[str, RoundTrip] = {
            "graph native, InMemorySaver": native_graph_trip(native_graph(InMemorySaver())),
            "graph crossgate, InMemorySaver + MemoryStore": gate_trip(
                memory_queue, crossgate_graph(memory_queue, InMemorySaver()), {"ticket_id": "t3"}
            ),
            "graph native, AsyncSqliteSaver": native_graph_trip(native_graph(sqlite_saver)),
            "graph crossgate, AsyncSqliteSaver + SqliteStore": gate_trip(
                sqlite_queue, crossgate_graph(sqlite_queue, sqlite_saver), {"ticket_id": "t3"}
            ),
            "agent native HITL per_call, InMemorySaver": native_agent_trip(
                create_agent(
                    agent_model(),
                    tools,
                    middleware=[HumanInTheLoopMiddleware({"write_file": True}, interrupt_mode="per_call")],
                    checkpointer=InMemorySaver(),
                )
            ),
            "agent crossgate per_call, InMemorySaver + MemoryStore": gate_trip(
                memory_queue,
                create_agent(
                    agent_model(),
                    tools,
                    middleware=crossgate_middleware(memory_queue, tools),
                    checkpointer=InMemorySaver(),
                    name="bench-agent",
                ),
                {"messages": [("user", "go")]},
            ),
        }
        for label in cases:
            results[label] = []
        # Interleave rounds so that machine noise spreads over every case alike.
        rounds = 5
        for r in range(rounds):
            for label, trip in cases.items():
                results[label] += await measure(trip, f"{label}-{r}", max(1, n // rounds), warmup if r == 0 else 0)
    memory_queue.close()
    sqlite_queue.close()
    return results


def report(results: dict[str, list[float]]) -> None:
    means = {label: statistics.mean(times) for label, times in results.items()}
    print(f"{'case':58} {'mean ms':>8} {'median':>8} {'p90':>8}")
    for label, times in results.items():
        p90 = sorted(times)[int(len(times) * 0.9) - 1]
        print(f"{label:58} {means[label]:8.2f} {statistics.median(times):8.2f} {p90:8.2f}")
    pairs = [
        ("graph crossgate, InMemorySaver + MemoryStore", "graph native, InMemorySaver"),
        ("graph crossgate, AsyncSqliteSaver + SqliteStore", "graph native, AsyncSqliteSaver"),
        ("agent crossgate per_call, InMemorySaver + MemoryStore", "agent native HITL per_call, InMemorySaver"),
    ]
    print()
    for ours, native in pairs:
        print(f"ratio {ours} / {native}: {means[ours] / means[native]:.2f}x")


def main(argv: list[str] | None = None) -> None:
    """Run every case and print means and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=50, help="round trips per case")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        report(asyncio.run(bench(args.n, args.warmup, Path(folder))))


if __name__ == "__main__":
    main()

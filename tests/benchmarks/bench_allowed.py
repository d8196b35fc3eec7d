"""Benchmark: what crossgate adds to an agent run whose tool calls the policy allows.

    python -m tests.benchmarks.bench_allowed [--runs 60] [--calls 10] [--stores full,decisions,memory]

One run makes ``--calls`` tool calls the policy allows, one per model turn, through each adapter's
allow path, against the same run without crossgate:

- ``openai``: ``Gate.run`` with the scripted ``PlannedModel`` (two calls a turn: the SDK's default limit
  is 10 model turns), against ``Runner.run`` of the same agent;
- ``toolnode``: a LangGraph graph with ``ToolNode(wrap_tool_call=gated_tool_wrapper(queue))``, against
  the bare ``ToolNode``;
- ``pydantic_ai``: Pydantic AI ``Gate.run`` with the scripted ``planned_model`` (one call a turn), against
  ``Agent.run`` of the same agent;
- ``agent``: ``create_agent`` with ``crossgate_middleware``, against ``create_agent`` with no middleware
  and against LangChain's own ``HumanInTheLoopMiddleware`` configured for another tool (so it never
  pauses, but runs its machinery on every turn).

Every gate is verified, the default: the queue holds an authority (it signs the state head), and the gate
pins its public key, so each allowed call passes the state head check (``crossgate.adapter._heads``).
crossgate runs once per store: default SQLite (``full``), SQLite ``decisions``, and the memory store.
Every one of those runs has tracing off (no OpenTelemetry SDK configured, the default); a last table
pairs the OpenAI and ToolNode paths with tracing off against the same paths with an SDK configured
(``tests/benchmarks/tracing_switch.py``).
Each pair runs alternately (the order flips every run) and the figures are paired medians: the median
over runs of (crossgate run - bare run) / calls, and the median of the per-run ratios. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents import Agent, Runner, function_tool, set_tracing_disabled
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic_ai import Agent as PydanticAgent

from crossgate import Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.runs import Finished
from crossgate_langgraph import crossgate_middleware, gated_tool_wrapper
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from crossgate_openai import Gate
from crossgate_pydantic_ai import Gate as PydanticAIGate
from crossgate_pydantic_ai.testing import Call as PydanticAICall
from crossgate_pydantic_ai.testing import planned_model
from tests.adapters.openai.scripted import Call, PlannedModel
from tests.benchmarks.tracing_switch import sdk_provider, traced

Run = Callable[[int], Awaitable[None]]
STORES = {"full": "sqlite:///{folder}/full.db", "decisions": "sqlite:///{folder}/decisions.db?durability=decisions"}
STORES["memory"] = "memory:"
WARMUP = 5
GOAL_MICROSECONDS = 50
GOAL_RATIO = 1.05
AUTHORITY = Authority.generate()
"""The queue's signing key; every gate pins its public key (``verified_queue``)."""


def gated_queue(url: str) -> ReviewQueue:
    """A queue on ``url`` that signs with ``AUTHORITY``, as a server's does: its gates verify."""
    return ReviewQueue(open_store(url), policy(), authority=AUTHORITY)


def policy() -> Policy:
    """A small policy: reads are allowed, deletes ask, one tool is denied."""
    return Policy(
        rules=(
            PolicyRule(name="allow-reads", verdict=VerdictKind.ALLOW, tool="read_ticket"),
            PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),
            PolicyRule(name="no-shell", verdict=VerdictKind.DENY, tool="shell", reason="no shell"),
        )
    )


# OpenAI Agents SDK ----------------------------------------------------------------------------------
def openai_agent(calls: int) -> Agent[Any]:
    @function_tool(name_override="read_ticket")
    async def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        return f"ticket {id}: printer on fire"

    # Two calls a turn: Gate.run keeps the SDK's default of 10 model turns, and 10 calls + the answer is 11.
    planned = [Call("read_ticket", f'{{"id": "t{i}"}}', f"call_{i}") for i in range(calls)]
    turns = [planned[i : i + 2] for i in range(0, calls, 2)]
    return Agent(name="Reader", tools=[read_ticket], model=PlannedModel(turns))


def openai_runs(queue: ReviewQueue, calls: int) -> tuple[Run, Run]:
    bare_agent, gated_agent = openai_agent(calls), openai_agent(calls)
    gate = Gate(queue)

    async def bare(i: int) -> None:
        result = await Runner.run(bare_agent, "Read the tickets.")
        assert result.final_output == "done"

    async def gated(i: int) -> None:
        outcome = await gate.run(gated_agent, "Read the tickets.", run=f"openai-{i}")
        assert isinstance(outcome, Finished) and outcome.result.final_output == "done"

    return bare, gated


# LangGraph ToolNode ---------------------------------------------------------------------------------
@tool
def read_ticket(id: str) -> str:
    """Read a ticket by id."""
    return f"ticket {id}: printer on fire"


def chat_model(calls: int) -> ScriptedChatModel:
    turns = [
        AIMessage(content="", tool_calls=[tool_call("read_ticket", {"id": f"t{i}"}, f"call_{i}")]) for i in range(calls)
    ]
    return ScriptedChatModel(turns=turns)


def tool_graph(calls: int, node: ToolNode) -> Any:
    model = chat_model(calls)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())  # crossgate needs a thread; the bare run gets one too


def toolnode_runs(queue: ReviewQueue, calls: int) -> tuple[Run, Run]:
    bare_graph = tool_graph(calls, ToolNode([read_ticket]))
    gated_graph = tool_graph(calls, ToolNode([read_ticket], wrap_tool_call=gated_tool_wrapper(queue)))

    def runner(graph: Any, label: str) -> Run:
        async def run(i: int) -> None:
            config = {"configurable": {"thread_id": f"{label}-{i}"}}
            result = await graph.ainvoke({"messages": [("user", "read the tickets")]}, config)
            assert len(result["messages"]) == 2 * calls + 2

        return run

    return runner(bare_graph, "bare"), runner(gated_graph, "gated")


# Pydantic AI -----------------------------------------------------------------------------------------
def pydantic_ai_agent(calls: int) -> PydanticAgent[None, str]:
    plan = [[PydanticAICall("read_ticket", f'{{"id": "t{i}"}}', f"call_{i}")] for i in range(calls)]
    agent: PydanticAgent[None, str] = PydanticAgent(planned_model(plan), name="Reader")

    @agent.tool_plain(name="read_ticket")
    def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        return f"ticket {id}: printer on fire"

    return agent


def pydantic_ai_runs(queue: ReviewQueue, calls: int) -> tuple[Run, Run]:
    bare_agent, gated_agent = pydantic_ai_agent(calls), pydantic_ai_agent(calls)
    gate = PydanticAIGate(queue)

    async def bare(i: int) -> None:
        result = await bare_agent.run("Read the tickets.")
        assert result.output == "Done."

    async def gated(i: int) -> None:
        outcome = await gate.run(gated_agent, "Read the tickets.", run=f"pydantic-ai-{i}")
        assert isinstance(outcome, Finished) and outcome.result.output == "Done."

    return bare, gated


# LangChain create_agent -----------------------------------------------------------------------------
def agent_runs(queue: ReviewQueue | None, calls: int, *, hitl: bool = False) -> Run:
    tools = [read_ticket]
    if queue is not None:
        middleware: list[Any] = crossgate_middleware(queue, tools)
    elif hitl:  # LangChain's own middleware, never pausing: it asks about another tool only
        middleware = [HumanInTheLoopMiddleware({"delete_ticket": True})]
    else:
        middleware = []
    graph = create_agent(chat_model(calls), tools, middleware=middleware, checkpointer=InMemorySaver())
    label = "gated" if queue is not None else ("hitl" if hitl else "bare")

    async def run(i: int) -> None:
        config = {"configurable": {"thread_id": f"{label}-{i}"}}
        result = await graph.ainvoke({"messages": [("user", "read the tickets")]}, config)
        assert len(result["messages"]) == 2 * calls + 2

    return run


# measuring ------------------------------------------------------------------------------------------
async def paired(bare: Run, gated: Run, runs: int) -> tuple[list[float], list[float]]:
    """Seconds per run of each, alternating which goes first."""
    bare_times: list[float] = []
    gated_times: list[float] = []
    for i in range(WARMUP + runs):
        pair = [(bare, bare_times), (gated, gated_times)]
        for run, times in pair if i % 2 == 0 else reversed(pair):
            start = time.perf_counter()
            await run(i)
            if i >= WARMUP:
                times.append(time.perf_counter() - start)
    return bare_times, gated_times


def figures(bare: list[float], gated: list[float], calls: int) -> tuple[float, float, float]:
    """(µs added per call, run ratio, bare run ms): paired medians."""
    added = statistics.median((g - b) / calls for b, g in zip(bare, gated, strict=True)) * 1e6
    ratio = statistics.median(g / b for b, g in zip(bare, gated, strict=True))
    return added, ratio, statistics.median(bare) * 1000


async def measure(runs: int, calls: int, stores: list[str], folder: Path) -> list[tuple[str, str, float, float, float]]:
    rows: list[tuple[str, str, float, float, float]] = []
    os.environ.setdefault("CROSSGATE_HEAD_DIR", str(folder / "heads"))  # the gates' head files
    for store in stores:
        queue = gated_queue(STORES[store].format(folder=folder))
        try:
            cases: list[tuple[str, Run, Run]] = [
                ("OpenAI Gate.run", *openai_runs(queue, calls)),
                ("LangGraph ToolNode + gated_tool_wrapper", *toolnode_runs(queue, calls)),
                ("Pydantic AI Gate.run", *pydantic_ai_runs(queue, calls)),
                ("create_agent + crossgate_middleware", agent_runs(None, calls), agent_runs(queue, calls)),
                ("  the same, against HITL not pausing", agent_runs(None, calls, hitl=True), agent_runs(queue, calls)),
            ]
            for label, bare, gated in cases:
                bare_times, gated_times = await paired(bare, gated, runs)
                rows.append((label, store, *figures(bare_times, gated_times, calls)))
            report = queue.verify_audit()
            assert report.ok, report.problem
        finally:
            queue.close()
    return rows


async def measure_tracing(runs: int, calls: int, folder: Path) -> list[tuple[str, float, float, int]]:
    """The allow path with tracing off (no SDK) against on (an SDK, spans dropped), default SQLite store.

    Rows: (path, µs/call tracing adds, run ratio on/off, spans per run). Off is what every other figure
    of this benchmark measures.
    """
    rows: list[tuple[str, float, float, int]] = []
    os.environ.setdefault("CROSSGATE_HEAD_DIR", str(folder / "heads"))
    queue = gated_queue(STORES["full"].format(folder=folder))
    try:
        for label, make in (
            ("OpenAI Gate.run", openai_runs),
            ("LangGraph ToolNode + gated_tool_wrapper", toolnode_runs),
        ):
            provider, exporter = sdk_provider()
            gated, gated_too = make(queue, calls)[1], make(queue, calls)[1]  # each its own graph and threads
            off, on = await paired(gated, traced(gated_too, provider), runs)
            added, ratio, _ = figures(off, on, calls)
            rows.append((label, added, ratio, exporter.spans // (WARMUP + runs)))
    finally:
        queue.close()
    return rows


def goal(added: float, ratio: float) -> str:
    """The goal beside a figure: < 50 µs added per call and a run ratio <= 1.05, met or missed."""
    met = added < GOAL_MICROSECONDS and ratio <= GOAL_RATIO
    return f"{'met' if met else 'MISSED'} (< {GOAL_MICROSECONDS} µs, <= {GOAL_RATIO:.2f}×)"


def main(argv: list[str] | None = None) -> None:
    """Measure every adapter's allow path on every store and print µs added per call and the run ratio."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="paired runs per case")
    parser.add_argument("--calls", type=int, default=10, help="allowed tool calls per run")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated: " + ", ".join(STORES))
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    unknown = sorted(set(stores) - set(STORES))
    if unknown:
        raise SystemExit(f"unknown stores {unknown}; known: {', '.join(STORES)}")
    set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as folder:
        rows = asyncio.run(measure(args.runs, args.calls, stores, Path(folder)))
        tracing = asyncio.run(measure_tracing(args.runs, args.calls, Path(folder)))
    print(f"allowed calls: {args.calls} per run, {args.runs} paired runs after {WARMUP} warm-up (paired medians)")
    print(f"{'path':<42}{'store':<11}{'µs/call added':>14}{'ratio':>8}{'bare run ms':>13}  goal")
    for label, store, added, ratio, bare_ms in rows:
        print(f"{label:<42}{store:<11}{added:>14.0f}{ratio:>8.2f}{bare_ms:>13.2f}  {goal(added, ratio)}")
    print("tracing on (an OpenTelemetry SDK, spans dropped) against off (no SDK), full store, paired medians")
    print(f"{'path':<42}{'µs/call added':>14}{'ratio':>8}{'spans/run':>11}")
    for label, added, ratio, spans in tracing:
        print(f"{label:<42}{added:>14.0f}{ratio:>8.2f}{spans:>11}")


if __name__ == "__main__":
    main()

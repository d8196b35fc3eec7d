"""Failure paths: each fails closed with a clear error, and nothing runs or changes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from crossgate import (
    AdapterError,
    Approve,
    ConfigurationError,
    ConflictError,
    InvalidDecisionError,
    MemoryStore,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.model import EXPIRY_MESSAGE
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, neutral_decision, open_checkpointer, resume_command
from tests.adapters.langgraph.test_agent import INPUT, by_tool, start, told
from tests.adapters.langgraph.worlds import OPS_POLICY, SQL, WRITE, OpsTools, ops_agent, ops_model, ticket_graph

OPS = {"configurable": {"thread_id": "ops-per_call"}}
BATCH = {"configurable": {"thread_id": "ops-batched"}}


async def pending_of(agent: Any, config: dict[str, Any]) -> list[Any]:
    return list((await agent.aget_state(config)).interrupts)


async def test_a_mistyped_interrupt_id_is_refused_and_nothing_changes(ops_queue, saver) -> None:
    agent, _, _, tools, _ = await start(ops_queue, saver, "per_call", WRITE)
    [pending] = await pending_of(agent, OPS)
    typo = pending.id[:-1] + ("0" if pending.id[-1] != "0" else "1")
    for key in (typo, pending.id.upper(), "write_file"):
        with pytest.raises(InvalidDecisionError, match="not a pending interrupt id"):
            resume_command([pending], {key: {"type": "approve"}})
    assert [i.id for i in await pending_of(agent, OPS)] == [pending.id]
    assert tools.ran == []


async def test_a_wrong_batched_count_is_refused_before_anything_is_saved(ops_queue, saver) -> None:
    agent, gate, outcome, tools, _ = await start(ops_queue, saver, "batched", WRITE, SQL)
    [pending] = await pending_of(agent, BATCH)
    with pytest.raises(InvalidDecisionError, match="lists 2 tool calls but the answer has 1"):
        resume_command([pending], {pending.id: {"decisions": [{"type": "approve"}]}})
    with pytest.raises(InvalidDecisionError, match="not allowed"):
        resume_command(
            [pending], {pending.id: {"decisions": [{"type": "approve"}, {"type": "respond", "message": "x"}]}}
        )
    # The thread is not poisoned: crossgate's own resume still works afterwards.
    for request_id in outcome.request_ids:
        ops_queue.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert sorted(tools.names()) == ["execute_sql", "write_file"]


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_an_edit_naming_another_tool_is_refused(ops_queue, saver, mode: str) -> None:
    switch = {"type": "edit", "edited_action": {"name": "read_data", "args": {"table": "secrets"}}}
    with pytest.raises(InvalidDecisionError, match="cannot switch to 'read_data'"):
        neutral_decision(switch, "write_file", {"path": "a", "content": "b"})
    agent, _, _, tools, _ = await start(ops_queue, saver, mode, WRITE)
    config = OPS if mode == "per_call" else BATCH
    [pending] = await pending_of(agent, config)
    answer = switch if mode == "per_call" else {"decisions": [switch]}
    with pytest.raises(InvalidDecisionError, match="cannot switch"):
        resume_command([pending], {pending.id: answer})
    assert tools.ran == []


async def test_a_native_resume_past_crossgate_runs_no_gated_tool(ops_queue, saver) -> None:
    """LangChain's batched mode would run read_data under write_file's call id (langchain#40166)."""
    agent, _, outcome, tools, model = await start(ops_queue, saver, "batched", WRITE, SQL)
    [pending] = await pending_of(agent, BATCH)
    switch = {"type": "edit", "edited_action": {"name": "read_data", "args": {"table": "secrets"}}}
    await agent.ainvoke(Command(resume={pending.id: {"decisions": [switch, {"type": "approve"}]}}), BATCH)
    assert tools.ran == []  # neither the swapped-in read_data nor the unreviewed SQL ran
    messages = told(model)
    assert "refusing to run read_data" in str(messages["call_write"].content)
    assert "still pending" in str(messages["call_sql"].content)
    assert all(ops_queue.get(r).status is RequestStatus.PENDING for r in outcome.request_ids)


async def test_an_expired_request_runs_nothing_and_the_model_is_told(tickets, saver) -> None:
    quick = PolicyRule(name="quick", verdict=VerdictKind.ASK, tool="*", timeout_seconds=0.05)
    queue = ReviewQueue(MemoryStore(), Policy(rules=(quick,)))
    graph = ticket_graph(queue, tickets, saver, [])
    gate = Gate(queue, graph)
    outcome = await gate.run(graph, {"ticket_id": "t3"}, thread="late")
    assert isinstance(outcome, Parked)
    await asyncio.sleep(0.1)
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert done.result["outcome"] == f"rejected: {EXPIRY_MESSAGE}"
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.EXPIRED
    with pytest.raises(ConflictError):
        queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")


async def test_an_expired_agent_request_tells_the_model(saver) -> None:
    quick = OPS_POLICY.model_copy(
        update={"rules": (PolicyRule(name="q", verdict=VerdictKind.ASK, tool="write_file", timeout_seconds=0.05),)}
    )
    queue = ReviewQueue(MemoryStore(), quick)
    _, gate, outcome, tools, model = await start(queue, saver, "per_call", WRITE)
    await asyncio.sleep(0.1)
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tools.ran == []
    assert EXPIRY_MESSAGE in str(told(model)["call_write"].content)


async def test_running_a_parked_thread_again_is_refused(ops_queue, saver) -> None:
    agent, gate, _, tools, _ = await start(ops_queue, saver, "per_call", WRITE)
    with pytest.raises(ConflictError, match="parked"):
        await gate.run(agent, INPUT, thread="ops-per_call")
    assert tools.ran == []


async def test_an_interrupt_crossgate_does_not_understand_is_not_parked(queue, saver) -> None:
    def ask_raw(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": interrupt("approve?")}

    builder = StateGraph(dict)
    builder.add_node("ask", ask_raw)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver, name="raw")
    with pytest.raises(AdapterError, match="not a crossgate or LangChain approval"):
        await Gate(queue).run(graph, {"x": 1}, thread="raw")
    assert queue.parked_runs() == []


async def test_resuming_needs_the_graph_and_refuses_a_graph_name_twice(ops_queue, saver) -> None:
    agent, _, outcome, _, _ = await start(ops_queue, saver, "per_call", WRITE)
    ops_queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match="does not know graph"):
        await Gate(ops_queue).resume(outcome.parked_run)
    assert ops_queue.get_parked(outcome.parked_run).status is ParkedRunStatus.PARKED
    other = ops_agent(ops_queue, OpsTools(), ops_model(WRITE), saver, "per_call")
    with pytest.raises(ConfigurationError, match="two graphs are named"):
        Gate(ops_queue, agent, other)


async def test_resume_before_any_decision_changes_nothing(ops_queue, saver) -> None:
    _, gate, outcome, tools, _ = await start(ops_queue, saver, "per_call", WRITE, SQL)
    assert await gate.resume(outcome.parked_run, partial=True) == outcome
    assert ops_queue.get_parked(outcome.parked_run).status is ParkedRunStatus.PARKED
    assert tools.ran == []
    assert sorted(by_tool(ops_queue, outcome)) == ["execute_sql", "write_file"]


async def test_two_concurrent_resumes_in_one_process_run_the_tool_once(ops_queue, saver) -> None:
    agent, gate, outcome, tools, _ = await start(ops_queue, saver, "per_call", WRITE)
    ops_queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    other_gate = Gate(ops_queue, agent, owner="second-gate")
    results = await asyncio.gather(
        gate.resume(outcome.parked_run), other_gate.resume(outcome.parked_run), return_exceptions=True
    )
    assert sum(isinstance(r, Finished) for r in results) == 1
    assert sum(isinstance(r, ParkedRunClaimedError) for r in results) == 1
    assert tools.names() == ["write_file"]


async def test_a_thread_paused_without_a_parked_run_can_be_parked_later(ops_queue, saver) -> None:
    tools = OpsTools()
    agent = ops_agent(ops_queue, tools, ops_model(WRITE), saver, "per_call")
    # The process died right after the pause: LangGraph holds the interrupt, crossgate knows nothing.
    await agent.ainvoke(INPUT, OPS)
    assert ops_queue.pending() == []
    gate = Gate(ops_queue, agent)
    parked = await gate.park(agent, thread="ops-per_call")
    assert isinstance(parked, Parked)
    with pytest.raises(ConflictError, match="parked already"):
        await gate.park(agent, thread="ops-per_call")
    ops_queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert tools.names() == ["write_file"]
    with pytest.raises(ConflictError, match="never started"):
        await gate.park(agent, thread="nobody")


async def test_a_graph_without_a_checkpointer_is_refused_before_it_runs(queue, tickets) -> None:
    entered: list[str] = []
    graph = ticket_graph(queue, tickets, None, entered)
    with pytest.raises(ConfigurationError, match="no checkpointer"):
        await Gate(queue).run(graph, {"ticket_id": "t3"}, thread="x")
    assert entered == []
    assert queue.pending() == []


@pytest.mark.parametrize(
    ("suffix", "level"),
    [("", 2), ("?durability=full", 2), ("?durability=decisions", 1), ("?durability=normal", 1)],
)
async def test_sqlite_checkpoints_take_the_stores_durability(tmp_path: Path, suffix: str, level: int) -> None:
    target = f"sqlite:///{tmp_path / 'checkpoints.db'}{suffix}"
    async with open_checkpointer(target) as saver, saver.conn.execute("PRAGMA synchronous") as cursor:
        assert (await cursor.fetchone())[0] == level
    assert sorted(os.listdir(tmp_path))[0] == "checkpoints.db"  # the query is not part of the file name


@pytest.mark.parametrize("target", ["sqlite:///x.db?durability=sometimes", "sqlite:///x.db?mode=ro", "sqlite:///"])
async def test_a_bad_checkpoint_url_is_a_configuration_error(tmp_path: Path, target: str) -> None:
    with pytest.raises(ConfigurationError):
        async with open_checkpointer(target.replace("x.db", str(tmp_path / "x.db"))):
            pass
    assert os.listdir(tmp_path) == []

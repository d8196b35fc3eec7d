"""Strands' own trap, on the bare SDK, then closed through crossgate.

Strands' pause is an interrupt raised from a ``BeforeToolCallEvent`` hook; the agent's snapshot (messages and
interrupt state: ``take_snapshot(preset="session")``, what its session managers store) is what an app keeps to
resume in another process. Strands refuses a second answer on the one live agent, but every agent restored
from the stored snapshot accepts the same interrupt response again: two resumers (or a store put back to
yesterday's copy) run the tool twice. The response is bound to the interrupt id (the call's ``toolUseId``),
not to what was reviewed: a snapshot whose call arguments were rewritten after the approval runs the
rewritten call. Through crossgate the same snapshot, answered twice or rewritten, runs the tool once, and
only as reviewed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands")

from strands import Agent, Snapshot
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry

from crossgate import Approve, Policy, ReviewQueue, VerdictKind
from crossgate.adapter import RunScope
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL
from crossgate_strands import Gate
from crossgate_strands._hook import ACTIVE, Drive, install
from crossgate_strands.testing import planned_model, tool_results
from tests.adapters.strands.driver import AGENT, delete_call, ticket_agent


class AskFirst(HookProvider):
    """The bare SDK's approval hook, as Strands documents it: interrupt, then obey the response."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.check)

    def check(self, event: BeforeToolCallEvent) -> None:
        answer = event.interrupt("approve", reason={"input": event.tool_use["input"]})
        if answer != "yes":
            event.cancel_tool = "rejected"


def bare_agent(tickets: TicketStore, record: Path) -> Agent:
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    agent.hooks.add_hook(AskFirst())
    return agent


def answers(interrupts: list[str], response: Any) -> list[Any]:
    return [{"interruptResponse": {"interruptId": i, "response": response}} for i in interrupts]


async def bare_pause(tickets: TicketStore, record: Path) -> tuple[dict[str, Any], list[str]]:
    """Run the bare agent to its interrupt: the stored snapshot and the interrupt ids."""
    agent = bare_agent(tickets, record)
    result = await agent.invoke_async("Delete the spam tickets.")
    assert result.stop_reason == "interrupt" and tickets.delete_runs() == 0
    return agent.take_snapshot(preset="session").to_dict(), [i.id for i in result.interrupts or []]


def rewritten(snapshot: dict[str, Any], before: str, after: str) -> dict[str, Any]:
    """The stored snapshot with the call's arguments rewritten, as an agent holding the store could."""
    text = json.dumps(snapshot).replace(f'{{"id": "{before}"}}', f'{{"id": "{after}"}}')
    assert text != json.dumps(snapshot)
    return json.loads(text)  # type: ignore[no-any-return]


async def test_bare_sdk_refuses_a_second_answer_on_the_live_agent(tickets: TicketStore, tmp_path: Path) -> None:
    agent = bare_agent(tickets, tmp_path / "in.jsonl")
    result = await agent.invoke_async("Delete the spam tickets.")
    ids = [i.id for i in result.interrupts or []]
    await agent.invoke_async(answers(ids, "yes"))
    with pytest.raises(ValueError, match="not in interrupt state"):
        await agent.invoke_async(answers(ids, "yes"))
    assert tickets.delete_runs("t3") == 1


async def test_bare_sdk_two_agents_restored_from_one_snapshot_run_the_tool_twice(
    tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    snapshot, ids = await bare_pause(tickets, record)
    for _ in range(2):  # two processes, each restoring the stored snapshot
        agent = bare_agent(tickets, record)
        agent.load_snapshot(Snapshot.from_dict(snapshot))
        await agent.invoke_async(answers(ids, "yes"))
    assert tickets.delete_runs("t3") == 2, "Strands' trap: the one answer ran the delete twice"


async def test_bare_sdk_runs_a_rewritten_call_under_the_answer(tickets: TicketStore, tmp_path: Path) -> None:
    record = tmp_path / "in.jsonl"
    snapshot, ids = await bare_pause(tickets, record)
    agent = bare_agent(tickets, record)
    agent.load_snapshot(Snapshot.from_dict(rewritten(snapshot, "t3", "t1")))
    await agent.invoke_async(answers(ids, "yes"))
    assert (tickets.delete_runs("t1"), tickets.delete_runs("t3")) == (1, 0), "t3 was approved, t1 was deleted"


async def parked_with_approval(
    queue: ReviewQueue, tickets: TicketStore, record: Path, run: str
) -> tuple[dict[str, Any], list[str]]:
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    parked = await Gate(queue).run(agent, "go", run=run)
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    state = json.loads(queue.get_parked(parked.parked_run).state)
    return state["snapshot"], state["interrupts"]


async def replay(queue: ReviewQueue, tickets: TicketStore, record: Path, run: str, snapshot: dict[str, Any]) -> None:
    """Restore ``snapshot`` into a fresh agent behind crossgate's hook and answer its interrupts, past the claim."""
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    install(agent)
    agent.load_snapshot(Snapshot.from_dict(snapshot))
    interrupts = [i["id"] for i in snapshot["data"]["interrupt_state"]["interrupts"].values()]
    token = ACTIVE.set(Drive(queue, AGENT, RunScope(run)))
    try:
        await agent.invoke_async(answers(interrupts, "yes"))
    finally:
        ACTIVE.reset(token)


async def test_through_crossgate_the_snapshot_answered_twice_runs_the_tool_once(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    snapshot, _ = await parked_with_approval(queue, tickets, record, "run-trap")
    for _ in range(2):  # what an agent with the store, or two racing resumers, would do with Strands' state
        await replay(queue, tickets, record, "run-trap", snapshot)
    assert tickets.delete_runs("t3") == 1
    first, second = tool_results(record, TOOL)
    assert first == "deleted ticket t3"
    assert "already ran for this call" in second and "deleted ticket t3" in second


async def test_through_crossgate_a_call_rewritten_after_the_approval_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    snapshot, _ = await parked_with_approval(queue, tickets, record, "run-rewrite")
    await replay(queue, tickets, record, "run-rewrite", rewritten(snapshot, "t3", "t1"))
    assert tickets.delete_runs() == 0, "an approval of deleting t3 let another delete run"
    assert "reviewed for other arguments" in tool_results(record, TOOL)[-1]


async def test_a_gated_agent_called_outside_the_gate_runs_no_tool(
    make_queue: Callable[..., ReviewQueue], tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    assert isinstance(await Gate(make_queue(Policy(default=VerdictKind.ALLOW))).run(agent, "go"), Finished)
    assert tickets.delete_runs("t3") == 1
    agent.messages.clear()
    await agent.invoke_async("Delete the spam tickets.")  # the bare call, no gate around it
    assert tickets.delete_runs("t3") == 1
    assert "run only through crossgate_strands.Gate" in tool_results(record, TOOL)[-1]

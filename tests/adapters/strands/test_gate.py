"""The Strands adapter through Strands' own event loop, hooks and tool executor: what runs, what the model
reads, what is stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands")

from strands import Agent, tool

from crossgate import (
    AdapterError,
    Approve,
    ConfigurationError,
    Edit,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    VerdictKind,
)
from crossgate.adapter import RunScope
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL
from crossgate_strands import Gate
from crossgate_strands._hook import NOT_THROUGH_GATE, strands_request_id
from crossgate_strands.testing import FINAL_TEXT, Call, planned_model, read_record, tool_results
from tests.adapters.strands.conftest import REJECTION
from tests.adapters.strands.driver import AGENT, delete_call, ticket_agent
from tests.adapters.strands.test_trap import answers


def statuses(record: Path) -> list[tuple[str, str]]:
    return [(line["status"], line["content"]) for line in read_record(record) if line["tool"] == TOOL]


@pytest.mark.parametrize(
    ("decision", "told", "deleted"),
    [
        (Edit(args={"id": "t2"}), ("success", "deleted ticket t2"), ["t2"]),
        (Respond(content="t3 was archived by hand"), ("success", "t3 was archived by hand"), []),
        (Reject(message=REJECTION), ("error", REJECTION), []),
    ],
    ids=["edit", "respond", "reject"],
)
async def test_each_decision_reaches_the_model_and_the_tool_as_decided(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, decision: Any, told: tuple[str, str], deleted: list[str]
) -> None:
    record = tmp_path / "in.jsonl"
    model = planned_model([[delete_call("t3")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-decide")
    assert isinstance(parked, Parked) and tool_results(record, TOOL) == [], "the model is not told of the pause"
    queue.decide(parked.request_ids[0], decision, reviewer="ann")
    done = await Gate(queue, sdk_agent=ticket_agent(tickets, model)).resume(parked.parked_run)
    assert isinstance(done, Finished) and str(done.result).strip() == FINAL_TEXT
    assert [t for t in ("t1", "t2", "t3") if tickets.delete_runs(t)] == deleted
    assert statuses(record) == [told]


async def test_a_policy_deny_runs_nothing_and_the_model_reads_the_reason(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    queue.policy = Policy(rules=(PolicyRule(name="no", verdict=VerdictKind.DENY, tool=TOOL, reason="Frozen."),))
    record = tmp_path / "in.jsonl"
    done = await Gate(queue).run(ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record)), "go")
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0 and queue.pending() == []
    assert statuses(record) == [("error", f"crossgate did not run {TOOL}: Frozen.")]


async def test_the_request_id_is_the_kits_recipe(queue: ReviewQueue, tickets: TicketStore, tmp_path: Path) -> None:
    """The schema and description a request carries: ``GateContract`` (test_contract.py)."""
    model = planned_model([[delete_call("t3")]], record=tmp_path / "in.jsonl")
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-schema")
    assert isinstance(parked, Parked)
    assert queue.get(parked.request_ids[0]).id == strands_request_id("run-schema", AGENT, "call_t3")


async def test_an_interrupt_answered_natively_while_pending_never_runs_the_tool(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """The app answers Strands' interrupt itself on the live agent: there is no crossgate decision."""
    record = tmp_path / "in.jsonl"
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    gate = Gate(queue)
    parked = await gate.run(agent, "go", run="run-native")
    assert isinstance(parked, Parked)
    interrupts = [i.id for i in agent._interrupt_state.interrupts.values()]
    await gate._drive(agent, RunScope.from_parked(queue.get_parked(parked.parked_run)), answers(interrupts, "yes"))
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [NOT_THROUGH_GATE.format(tool=TOOL)]
    assert queue.get(parked.request_ids[0]).status is RequestStatus.PENDING


async def test_resume_refuses_another_agent_and_an_unreadable_snapshot_and_leaves_the_run_parked(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    model = planned_model([[delete_call("t3")]], record=tmp_path / "in.jsonl")
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-other")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match="ran agent 'triage_agent', not 'other'"):
        await Gate(queue).resume(parked.parked_run, sdk_agent=ticket_agent(tickets, model, name="other"))
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:  # something else in the row
        db.execute("UPDATE parked_states SET state = ? WHERE id = ?", ('{"snapshot": 1}', parked.parked_run))
    with pytest.raises(AdapterError, match="holds no Strands snapshot"):
        await Gate(queue).resume(parked.parked_run, sdk_agent=ticket_agent(tickets, model))
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0


async def test_an_allowed_call_beside_an_asked_one_runs_once_and_the_model_reads_both(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    reads: list[str] = []

    @tool
    def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        reads.append(id)
        return f"ticket {id}"

    def agent() -> Agent:
        model = planned_model([[Call("read_ticket", {"id": "t2"}, "r1"), delete_call("t3")]], record=record)
        return ticket_agent(tickets, model, tools=[read_ticket])

    parked = await Gate(queue).run(agent(), "go", run="run-mixed")
    assert isinstance(parked, Parked) and reads == ["t2"]
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await Gate(queue, sdk_agent=agent()).resume(parked.parked_run), Finished)
    assert reads == ["t2"], "the allowed call ran once, not again on resume"
    assert tickets.delete_runs("t3") == 1
    assert sorted((line["tool"], line["content"]) for line in read_record(record)) == [
        ("delete_ticket", "deleted ticket t3"),
        ("read_ticket", "ticket t2"),
    ]


def test_the_public_api_is_small_and_sorted() -> None:
    import crossgate_strands

    assert crossgate_strands.__all__ == sorted(crossgate_strands.__all__)
    assert crossgate_strands.__all__ == ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]
    assert [k.value for k in crossgate_strands.CAPABILITIES] == ["approve", "edit", "reject", "respond"]

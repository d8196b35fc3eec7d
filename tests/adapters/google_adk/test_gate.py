"""The Google ADK adapter through ADK's own runner and plugin pipeline: what runs, what the model reads, what
is stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool

from crossgate import (
    AdapterError,
    Approve,
    ConfigurationError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.adapter import RunScope, request_id
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL
from crossgate_google_adk import Gate
from crossgate_google_adk._gate import ParkedState
from crossgate_google_adk._plugin import NOT_THROUGH_GATE, Gating
from crossgate_google_adk.testing import Call, planned_llm, read_record, tool_results
from tests.adapters.google_adk.driver import AGENT, delete_call, ticket_agent
from tests.adapters.google_adk.test_trap import confirm, drive, restored


async def test_a_confirmation_given_to_adk_directly_never_runs_the_tool(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """Someone with the store confirms the parked session natively: there is no crossgate decision."""
    record = tmp_path / "in.jsonl"
    model = planned_llm([[delete_call("t3")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-native")
    assert isinstance(parked, Parked)
    state = ParkedState.model_validate_json(queue.get_parked(parked.parked_run).state)
    plugin = Gating(queue, AGENT, RunScope("run-native"))
    sessions, copy = await restored(state.session.model_dump_json())
    await drive(ticket_agent(tickets, model), sessions, copy, confirm(state.confirmations), [plugin])
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [f'{{"error": "{NOT_THROUGH_GATE.format(tool=TOOL)}"}}']
    assert queue.get(parked.request_ids[0]).status is RequestStatus.PENDING


async def test_a_tool_that_asks_adk_for_confirmation_itself_is_refused(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    def archive(id: str) -> str:
        """Archive a ticket."""
        return f"archived {id}"

    model = planned_llm([[Call("archive", {"id": "t2"}, "a1")]])
    agent = LlmAgent(name="archiver", model=model, tools=[FunctionTool(archive, require_confirmation=True)])
    with pytest.raises(AdapterError, match="require_confirmation"):
        await Gate(queue).run(agent, "archive t2")
    assert queue.parked_runs() == [] and queue.pending() == []


async def test_resume_refuses_another_agent_and_leaves_the_run_parked(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    model = planned_llm([[delete_call("t3")]], record=tmp_path / "in.jsonl")
    parked = await Gate(queue).run(ticket_agent(tickets, model), "delete t3", run="run-name")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match=AGENT):
        await Gate(queue, sdk_agent=ticket_agent(tickets, model, name="other")).resume(parked.parked_run)
    with pytest.raises(ConfigurationError, match="resume needs the agent"):
        await Gate(queue).resume(parked.parked_run)
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0


async def test_request_ids_are_the_kits_recipe_so_a_resubmitted_call_finds_its_request(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    model = planned_llm([[delete_call("t3")]])
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-ids")
    assert isinstance(parked, Parked)
    assert parked.request_ids == (request_id("adk", "run-ids", AGENT, "call_t3"),)
    again = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-ids")
    assert isinstance(again, Parked) and again.request_ids == parked.request_ids
    assert tickets.delete_runs() == 0


def test_the_public_api_is_small_and_sorted() -> None:
    import crossgate_google_adk

    assert crossgate_google_adk.__all__ == sorted(crossgate_google_adk.__all__)
    assert crossgate_google_adk.__all__ == ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate", "RunResult"]
    assert [k.value for k in crossgate_google_adk.CAPABILITIES] == ["approve", "edit", "reject", "respond"]


async def test_a_parked_state_rewritten_to_run_another_tool_under_an_approval_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    """The agent holds the store: it renames the approved ``read_ticket`` call to ``delete_ticket`` in the state."""
    reads = PolicyRule(name="ask-reads", verdict=VerdictKind.ASK, tool="read_ticket")
    queue.policy = Policy(rules=(reads, *queue.policy.rules))
    record = tmp_path / "in.jsonl"

    def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        return f"ticket {id}"

    def agent() -> LlmAgent:
        model = planned_llm([[Call("read_ticket", {"id": "t3"}, "c1")]], record=record)
        return ticket_agent(tickets, model, tools=[read_ticket])

    parked = await Gate(queue).run(agent(), "go", run="run-swap")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    stored = queue.get_parked(parked.parked_run).state
    assert stored.count('"read_ticket"') >= 2
    swapped = stored.replace('"read_ticket"', f'"{TOOL}"')
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:  # the agent writes the row itself
        db.execute("UPDATE parked_states SET state = ? WHERE id = ?", (swapped, parked.parked_run))
    await Gate(queue, sdk_agent=agent()).resume(parked.parked_run)
    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"


async def test_an_allowed_call_beside_an_asked_one_runs_once_and_the_model_reads_both(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    reads: list[str] = []

    def read_ticket(id: str) -> str:
        """Read a ticket by id."""
        reads.append(id)
        return f"ticket {id}"

    def agent() -> LlmAgent:
        model = planned_llm([[Call("read_ticket", {"id": "t2"}, "r1"), delete_call("t3")]], record=record)
        return ticket_agent(tickets, model, tools=[read_ticket])

    parked = await Gate(queue).run(agent(), "go", run="run-mixed")
    assert isinstance(parked, Parked) and reads == ["t2"]
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await Gate(queue, sdk_agent=agent()).resume(parked.parked_run), Finished)
    assert reads == ["t2"], "the allowed call ran once, not again on resume"
    assert tickets.delete_runs("t3") == 1
    assert [(line["tool"], line["content"]) for line in read_record(record)] == [
        ("read_ticket", "ticket t2"),
        (TOOL, "deleted ticket t3"),
    ]

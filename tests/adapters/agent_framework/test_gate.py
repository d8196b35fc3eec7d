"""The Agent Framework adapter through the SDK's own function-invocation loop: what runs, what the model
reads, what is stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, AgentSession, Content, Message, tool

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
from crossgate_agent_framework import Gate
from crossgate_agent_framework._middleware import NOT_THROUGH_GATE, Gating
from crossgate_agent_framework.testing import Call, planned_client, read_record, tool_results
from tests.adapters.agent_framework.driver import AGENT, delete_call, ticket_agent


async def test_an_approval_given_to_the_sdk_directly_never_runs_the_tool(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """Someone with the store answers the parked session's request natively: there is no crossgate decision."""
    record = tmp_path / "in.jsonl"
    client = planned_client([[delete_call("t3")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, client), "go", run="run-native")
    assert isinstance(parked, Parked)
    state = json.loads(queue.get_parked(parked.parked_run).state)
    session = AgentSession.from_dict(state["session"])
    answers = [Content.from_dict(r).to_function_approval_response(approved=True) for r in state["requests"]]
    gating = Gating(queue, AGENT, RunScope("run-native"))
    await ticket_agent(tickets, client).run(
        Message(role="user", contents=answers), session=session, middleware=[gating]
    )
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [NOT_THROUGH_GATE.format(tool=TOOL)]
    assert queue.get(parked.request_ids[0]).status is RequestStatus.PENDING


async def test_a_tool_that_asks_the_sdk_for_approval_itself_is_refused(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    @tool(approval_mode="always_require")
    def archive(id: str) -> str:
        """Archive a ticket."""
        return f"archived {id}"

    client = planned_client([[Call("archive", {"id": "t2"}, "a1")]])
    agent: Agent[Any] = Agent(client=client, name="Archiver", tools=[archive])
    with pytest.raises(AdapterError, match="without asking crossgate"):
        await Gate(queue).run(agent, "archive t2")
    assert queue.parked_runs() == []


async def test_an_agent_needs_a_name_and_resume_refuses_another_agent(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    client = planned_client([[delete_call("t3")]], record=tmp_path / "in.jsonl")
    with pytest.raises(ConfigurationError, match="name"):
        await Gate(queue).run(Agent(client=client), "hi")
    parked = await Gate(queue).run(ticket_agent(tickets, client), "delete t3", run="run-name")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match="Triage agent"):
        await Gate(queue, sdk_agent=ticket_agent(tickets, client, name="Other")).resume(parked.parked_run)
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0


async def test_request_ids_are_the_kits_recipe_so_a_resubmitted_call_finds_its_request(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    client = planned_client([[delete_call("t3")]])
    parked = await Gate(queue).run(ticket_agent(tickets, client), "go", run="run-ids")
    assert isinstance(parked, Parked)
    assert parked.request_ids == (request_id("af", "run-ids", AGENT, "call_t3"),)
    again = await Gate(queue).run(ticket_agent(tickets, client), "go", run="run-ids")
    assert isinstance(again, Parked) and again.request_ids == parked.request_ids
    assert tickets.delete_runs() == 0


async def test_the_record_reads_what_the_model_was_sent(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    queue.policy = Policy(rules=(), default=VerdictKind.ALLOW)
    done = await Gate(queue).run(ticket_agent(tickets, planned_client([[delete_call("t3")]], record=record)), "go")
    assert isinstance(done, Finished)
    assert read_record(record) == [{"tool": TOOL, "call_id": "call_t3", "content": "deleted ticket t3"}]


def test_the_public_api_is_small_and_sorted() -> None:
    import crossgate_agent_framework

    assert crossgate_agent_framework.__all__ == sorted(crossgate_agent_framework.__all__)
    assert crossgate_agent_framework.__all__ == ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]
    assert [k.value for k in crossgate_agent_framework.CAPABILITIES] == ["approve", "edit", "reject", "respond"]


async def test_a_parked_state_rewritten_to_run_another_tool_under_an_approval_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    """The agent holds the store: it renames the approved ``read_ticket`` call to ``delete_ticket`` in the state."""
    read = PolicyRule(name="ask-reads", verdict=VerdictKind.ASK, tool="read_ticket")
    queue.policy = Policy(rules=(read, *queue.policy.rules))
    record = tmp_path / "in.jsonl"

    def agent() -> Agent[Any]:
        @tool
        def read_ticket(id: str) -> str:
            """Read a ticket by id."""
            return f"ticket {id}"

        built = ticket_agent(tickets, planned_client([[Call("read_ticket", {"id": "t3"}, "c1")]], record=record))
        return Agent(client=built.client, name=AGENT, tools=[read_ticket, *built.default_options["tools"]])

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
    queue.policy = Policy(rules=queue.policy.rules, default=VerdictKind.ALLOW)
    record = tmp_path / "in.jsonl"
    reads: list[str] = []

    def agent() -> Agent[Any]:
        @tool
        def read_ticket(id: str) -> str:
            """Read a ticket by id."""
            reads.append(id)
            return f"ticket {id}"

        plan = [[Call("read_ticket", {"id": "t2"}, "r1"), delete_call("t3")]]
        built = ticket_agent(tickets, planned_client(plan, record=record))
        return Agent(client=built.client, name=AGENT, tools=[read_ticket, *built.default_options["tools"]])

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

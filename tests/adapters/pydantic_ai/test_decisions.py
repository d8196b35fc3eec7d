"""Decisions as Pydantic AI receives them: several calls in one turn, edits of tools with defaults, and an
approval given to the SDK behind crossgate's back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic_ai import Agent, DeferredToolResults
from pydantic_ai.messages import ModelMessagesTypeAdapter

from crossgate import Approve, Edit, Reject, RequestStatus, ReviewQueue
from crossgate.adapter import RunScope
from crossgate.runs import Finished, Parked
from crossgate_pydantic_ai import Gate
from crossgate_pydantic_ai._toolset import NOT_THROUGH_GATE, Gating
from crossgate_pydantic_ai.testing import Call, planned_model, tool_results
from tests.adapters.pydantic_ai.conftest import REJECTION
from tests.adapters.pydantic_ai.driver import delete_call, ticket_agent
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore


async def test_two_calls_in_one_turn_park_together_and_each_gets_its_answer(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    model = planned_model([[delete_call("t3"), delete_call("t1")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-pair")
    assert isinstance(parked, Parked)
    t3, t1 = (queue.get(r) for r in parked.request_ids)
    assert (t3.call.args, t1.call.args) == ({"id": "t3"}, {"id": "t1"})
    queue.decide(t3.id, Approve(), reviewer="ann")
    still = await Gate(queue, sdk_agent=ticket_agent(tickets, model)).resume(parked.parked_run)
    assert isinstance(still, Parked), "the SDK needs an answer for every pending call: wait for both"
    assert tickets.delete_runs() == 0
    queue.decide(t1.id, Reject(message=REJECTION), reviewer="ann")
    done = await Gate(queue, sdk_agent=ticket_agent(tickets, model)).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert tool_results(record, TOOL) == ["deleted ticket t3", REJECTION]


def archive_agent(model: object, ran: list[tuple[str, str]]) -> Agent[None, str]:
    agent = Agent(model, name="Archiver")  # type: ignore[call-overload]

    @agent.tool_plain
    def archive(id: str, reason: str = "none given") -> str:
        ran.append((id, reason))
        return f"archived {id} ({reason})"

    return agent


async def test_an_edit_runs_as_edited_when_the_tool_fills_in_defaults(queue: ReviewQueue, tmp_path: Path) -> None:
    queue.policy = queue.policy.model_copy(
        update={"rules": (queue.policy.rules[0].model_copy(update={"tool": "archive"}),)}
    )
    record = tmp_path / "in.jsonl"
    model = planned_model([[Call("archive", '{"id": "t3"}', "a1")]], record=record)
    ran: list[tuple[str, str]] = []
    parked = await Gate(queue).run(archive_agent(model, ran), "go", run="run-defaults")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    assert queue.get(request_id).call.args == {"id": "t3", "reason": "none given"}, "the validated arguments"
    queue.decide(request_id, Edit(args={"id": "t4"}), reviewer="ann")
    done = await Gate(queue, sdk_agent=archive_agent(model, ran)).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert ran == [("t4", "none given")]
    assert tool_results(record, "archive") == ["archived t4 (none given)"]
    assert queue.get(request_id).status is RequestStatus.APPLIED


async def test_an_approval_given_to_the_sdk_directly_never_runs_the_tool(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """Someone with the store replays the parked history with ``approvals={id: True}``: no crossgate decision."""
    record = tmp_path / "in.jsonl"
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    parked = await Gate(queue).run(agent, "go", run="run-native")
    assert isinstance(parked, Parked)
    history = ModelMessagesTypeAdapter.validate_json(queue.get_parked(parked.parked_run).state)
    await agent.run(
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={"call_t3": True}),
        capabilities=[Gating(queue, agent.name or "", RunScope("run-native"))],
    )
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [NOT_THROUGH_GATE.format(tool=TOOL)]
    assert queue.get(parked.request_ids[0]).status is RequestStatus.PENDING


async def test_a_parked_history_rewritten_to_run_another_tool_under_an_approval_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    """The agent holds the store: it renames the approved ``read_ticket`` call to ``delete_ticket`` in the history."""
    read = queue.policy.rules[0].model_copy(update={"name": "ask-reads", "tool": "read_ticket"})
    queue.policy = queue.policy.model_copy(update={"rules": (read, *queue.policy.rules)})
    record = tmp_path / "in.jsonl"

    def agent() -> Agent[None, str]:
        built = ticket_agent(tickets, planned_model([[Call("read_ticket", '{"id": "t3"}', "c1")]], record=record))

        @built.tool_plain
        def read_ticket(id: str) -> str:
            return f"ticket {id}"

        return built

    parked = await Gate(queue).run(agent(), "go", run="run-swap")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    stored = queue.get_parked(parked.parked_run).state
    swapped = stored.replace('"read_ticket"', f'"{TOOL}"')
    assert swapped != stored
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:  # the agent writes the row itself
        db.execute("UPDATE parked_states SET state = ? WHERE id = ?", (swapped, parked.parked_run))
    await Gate(queue, sdk_agent=agent()).resume(parked.parked_run)
    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"

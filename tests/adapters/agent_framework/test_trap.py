"""Agent Framework's own trap, on the bare SDK, then closed through crossgate.

The SDK's pause is an ``AgentSession`` holding a pending ``function_approval_request``. It guards one live
session object (a second approval of the same request is ignored there), but the session is what an app
stores to resume in another process, and every restored copy of it accepts the approval again: two
resumers of one stored session run the tool twice. The SDK also ignores an approval whose arguments were
edited (the request stays pending) and rejects with a fixed text, so a reviewer can neither edit nor say why.
Through crossgate the same stored session, restored and answered twice, runs the tool once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_framework import Agent, AgentSession, Content, Message, tool

from crossgate import Approve, Edit, ReviewQueue
from crossgate.adapter import RunScope
from crossgate.runs import Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL
from crossgate_agent_framework import Gate
from crossgate_agent_framework._middleware import Gating
from crossgate_agent_framework.testing import planned_client, tool_results
from tests.adapters.agent_framework.driver import AGENT, delete_call, ticket_agent

NATIVE_REJECTION = "Error: Tool call invocation was rejected by user."


def bare_agent(tickets: TicketStore, record: Path) -> Agent[Any]:
    """The seed's agent on the bare SDK: the delete tool asks for the SDK's own approval."""

    @tool(name=TOOL, approval_mode="always_require")
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return tickets.delete(id)

    return Agent(client=planned_client([[delete_call("t3")]], record=record), name=AGENT, tools=[delete_ticket])


async def bare_pause(tickets: TicketStore, record: Path) -> tuple[str, Content]:
    agent = bare_agent(tickets, record)
    session = agent.create_session()
    response = await agent.run("Delete the spam tickets.", session=session)
    [request] = response.user_input_requests
    return json.dumps(session.to_dict()), request


async def test_bare_sdk_two_resumers_of_one_stored_session_run_the_tool_twice(
    tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    stored, request = await bare_pause(tickets, record)
    for _ in range(2):  # two processes, each restoring the stored session
        agent = bare_agent(tickets, record)
        session = AgentSession.from_dict(json.loads(stored))
        await agent.run(
            Message(role="user", contents=[request.to_function_approval_response(approved=True)]), session=session
        )
    assert tickets.delete_runs("t3") == 2, "the SDK's trap: the one approval ran the delete twice"


async def test_bare_sdk_ignores_an_edited_approval_and_rejects_with_a_fixed_text(
    tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    stored, request = await bare_pause(tickets, record)
    assert request.function_call is not None
    edited = Content.from_function_call(call_id=request.function_call.call_id or "", name=TOOL, arguments={"id": "t2"})
    answer = Content.from_function_approval_response(True, id=request.id or "", function_call=edited)
    agent = bare_agent(tickets, record)
    session = AgentSession.from_dict(json.loads(stored))
    still = await agent.run(Message(role="user", contents=[answer]), session=session)
    assert len(still.user_input_requests) == 1 and tickets.delete_runs() == 0, "the edit was ignored"

    session = AgentSession.from_dict(json.loads(stored))
    await agent.run(
        Message(role="user", contents=[request.to_function_approval_response(approved=False)]), session=session
    )
    assert tool_results(record, TOOL) == [NATIVE_REJECTION], "no way to tell the model why"


async def test_through_crossgate_the_stored_session_answered_twice_runs_the_tool_once(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    client = planned_client([[delete_call("t3")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, client), "go", run="run-trap")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    state = json.loads(queue.get_parked(parked.parked_run).state)
    for _ in range(2):  # what an attacker with the store, or two racing resumers, would do with the SDK's state
        session = AgentSession.from_dict(state["session"])
        answers = [Content.from_dict(r).to_function_approval_response(approved=True) for r in state["requests"]]
        gating = Gating(queue, AGENT, RunScope("run-trap"))
        await ticket_agent(tickets, client).run(
            Message(role="user", contents=answers), session=session, middleware=[gating]
        )
    assert tickets.delete_runs("t3") == 1
    first, second = tool_results(record, TOOL)
    assert first == "deleted ticket t3"
    assert "already ran for this call" in second and "deleted ticket t3" in second


async def test_through_crossgate_an_edit_runs_as_edited_and_a_rejection_is_read_verbatim(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    client = planned_client([[delete_call("t3")], [delete_call("t1")]], record=record)
    parked = await Gate(queue).run(ticket_agent(tickets, client), "go", run="run-edit")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Edit(args={"id": "t2"}), reviewer="ann")
    again = await Gate(queue, sdk_agent=ticket_agent(tickets, client)).resume(parked.parked_run)
    assert isinstance(again, Parked)
    assert (tickets.delete_runs("t2"), tickets.delete_runs("t3")) == (1, 0)
    assert tool_results(record, TOOL) == ["deleted ticket t2"]

"""Google ADK's own trap, on the bare SDK, then closed through crossgate.

ADK's pause is its session: the events hold the model's call and an ``adk_request_confirmation`` call, and
answering that call with ``{"confirmed": true}`` runs the tool. The session is what an app stores to resume
in another process, and every restored copy of it accepts the confirmation again: two resumers of one
stored session run the tool twice. The confirmation is bound to the call's id, not to what was reviewed:
a stored session whose call arguments were rewritten after the approval (in the model's call and in the
confirmation request, which ADK checks against each other) runs the rewritten call. And ADK's rejection is
a fixed text. Through crossgate the same stored session, answered twice or rewritten, runs the tool once,
and only as reviewed.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools import FunctionTool
from google.genai import types

from crossgate import Approve, ReviewQueue
from crossgate.adapter import RunScope
from crossgate.runs import Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL
from crossgate_google_adk import Gate
from crossgate_google_adk._gate import APP, CONFIRMATION, ParkedState
from crossgate_google_adk._plugin import Gating
from crossgate_google_adk.testing import planned_llm, tool_results
from tests.adapters.google_adk.driver import AGENT, delete_call, delete_tool, ticket_agent

NATIVE_REJECTION = "This tool call is rejected."


def bare_agent(tickets: TicketStore, record: Path) -> LlmAgent:
    """The seed's agent on the bare SDK: the delete tool asks for ADK's own confirmation."""
    tool = FunctionTool(delete_tool(tickets), require_confirmation=True)
    return LlmAgent(name=AGENT, model=planned_llm([[delete_call("t3")]], record=record), tools=[tool])


async def restored(stored: str) -> tuple[InMemorySessionService, Session]:
    """A fresh process's copy of a stored session: its events appended to a new in-memory service."""
    session = Session.model_validate_json(stored)
    sessions = InMemorySessionService()
    copy = await sessions.create_session(app_name=APP, user_id=session.user_id, session_id=session.id)
    for event in session.events:
        await sessions.append_event(copy, event)
    return sessions, copy


async def drive(
    agent: LlmAgent,
    sessions: InMemorySessionService,
    session: Session,
    message: types.Content,
    plugins: list[Gating] | None = None,
) -> list[str]:
    """Run ``agent`` on ``message``; the ids of the confirmations it asked for."""
    runner = Runner(app=App(name=APP, root_agent=agent, plugins=list(plugins or [])), session_service=sessions)
    asked = []
    async for event in runner.run_async(user_id=session.user_id, session_id=session.id, new_message=message):
        asked += [str(c.id) for c in event.get_function_calls() if c.name == CONFIRMATION]
    return asked


def confirm(confirmations: list[str], confirmed: bool = True) -> types.Content:
    response = {"confirmed": confirmed}
    part = types.Part
    parts = [
        part(function_response=types.FunctionResponse(name=CONFIRMATION, id=c, response=response))
        for c in confirmations
    ]
    return types.Content(role="user", parts=parts)


async def bare_pause(tickets: TicketStore, record: Path) -> tuple[str, list[str]]:
    """Run the bare agent to its confirmation: the stored session and the confirmation ids."""
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name=APP, user_id="user")
    prompt = types.Content(role="user", parts=[types.Part(text="Delete the spam tickets.")])
    asked = await drive(bare_agent(tickets, record), sessions, session, prompt)
    stored = await sessions.get_session(app_name=APP, user_id="user", session_id=session.id)
    assert stored is not None and len(asked) == 1 and tickets.delete_runs() == 0
    return stored.model_dump_json(), asked


def rewritten(stored: str, before: str, after: str) -> str:
    """The stored session with the call's arguments rewritten, as an agent holding the store could."""
    return stored.replace(f'{{"id":"{before}"}}', f'{{"id":"{after}"}}')


async def test_bare_sdk_two_resumers_of_one_stored_session_run_the_tool_twice(
    tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    stored, asked = await bare_pause(tickets, record)
    for _ in range(2):  # two processes, each restoring the stored session
        await drive(bare_agent(tickets, record), *await restored(stored), confirm(asked))
    assert tickets.delete_runs("t3") == 2, "ADK's trap: the one confirmation ran the delete twice"


async def test_bare_sdk_runs_a_rewritten_call_under_the_confirmation_and_rejects_with_a_fixed_text(
    tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    stored, asked = await bare_pause(tickets, record)
    edited = rewritten(stored, "t3", "t1")
    assert edited != stored
    await drive(bare_agent(tickets, record), *await restored(edited), confirm(asked))
    assert (tickets.delete_runs("t1"), tickets.delete_runs("t3")) == (1, 0), "t3 was confirmed, t1 was deleted"

    await drive(bare_agent(tickets, record), *await restored(stored), confirm(asked, confirmed=False))
    assert tool_results(record, TOOL)[-1] == json.dumps({"error": NATIVE_REJECTION}), "no way to tell the model why"


async def parked_with_approval(queue: ReviewQueue, tickets: TicketStore, record: Path, run: str) -> ParkedState:
    parked = await Gate(queue).run(
        ticket_agent(tickets, planned_llm([[delete_call("t3")]], record=record)), "go", run=run
    )
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    return ParkedState.model_validate_json(queue.get_parked(parked.parked_run).state)


async def test_through_crossgate_the_stored_session_answered_twice_runs_the_tool_once(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    state = await parked_with_approval(queue, tickets, record, "run-trap")
    for _ in range(2):  # what an agent with the store, or two racing resumers, would do with ADK's state
        agent = ticket_agent(tickets, planned_llm([[delete_call("t3")]], record=record))
        plugin = Gating(queue, AGENT, RunScope("run-trap"))
        await drive(agent, *await restored(state.session.model_dump_json()), confirm(state.confirmations), [plugin])
    assert tickets.delete_runs("t3") == 1
    first, second = tool_results(record, TOOL)
    assert first == "deleted ticket t3"
    assert "already ran for this call" in second and "deleted ticket t3" in second


async def test_through_crossgate_a_call_rewritten_after_the_approval_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    record = tmp_path / "in.jsonl"
    state = await parked_with_approval(queue, tickets, record, "run-rewrite")
    edited = rewritten(state.session.model_dump_json(), "t3", "t1")
    assert edited != state.session.model_dump_json()
    agent = ticket_agent(tickets, planned_llm([[delete_call("t3")]], record=record))
    plugin = Gating(queue, AGENT, RunScope("run-rewrite"))
    await drive(agent, *await restored(edited), confirm(state.confirmations), [plugin])
    assert tickets.delete_runs() == 0, "an approval of deleting t3 let another delete run"
    assert "reviewed for other arguments" in tool_results(record, TOOL)[-1]

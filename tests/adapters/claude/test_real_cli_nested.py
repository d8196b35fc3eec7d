"""Nested subagents through the real bundled CLI, offline: a subagent that starts a subagent.

A subagent whose definition lists ``Agent`` is offered that tool and can start subagents itself (CLI
2.1.332). Here the main agent starts the ``dispatcher``, which starts the ``ticket-cleaner``; every
conversation is scripted by the prompt it is given (``agent_call`` lines nest).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, HookMatcher

from crossgate import (
    Approve,
    ParkedRunStatus,
    PolicyRule,
    Reject,
    RequestQuery,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI, agent_call, tool_uses
from tests.adapters.claude.conftest import PROTECTED
from tests.adapters.claude.review import context_of, conversation, origin_kind, reviewer, stop, told, tools_offered
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

MAIN = "support-desk"
DISPATCHER = "dispatcher"
CLEANER = "ticket-cleaner"
REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."
NO_LISTING = "The ticket cleaner works from the ids it is given; it does not list tickets."
NO_SUCH_AGENT_TOOL = "No such tool available: Agent"


@pytest.fixture
def started() -> dict[str, str]:
    """agent_type -> agent_id of every subagent invocation, as the CLI's SubagentStart reports it."""
    return {}


@pytest.fixture
def options(cli_options: ClaudeAgentOptions, started: dict[str, str]) -> ClaudeAgentOptions:
    async def note(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        assert str(data["agent_type"]) not in started, "one invocation of each agent type per test"
        started[str(data["agent_type"])] = str(data["agent_id"])
        return {}

    dispatcher = AgentDefinition(
        description="Hands ticket work to the right specialist.",
        prompt="You delegate ticket work.",
        tools=["Agent", "mcp__tickets__list_tickets"],
    )
    cleaner = AgentDefinition(
        description="Deletes the spam tickets it is given.",
        prompt="You delete the spam tickets you are given.",
        tools=["mcp__tickets__delete_ticket", "mcp__tickets__list_tickets"],
    )
    return replace(
        cli_options,
        tools=["Bash", "Agent"],
        agents={DISPATCHER: dispatcher, CLEANER: cleaner},
        hooks={"SubagentStart": [HookMatcher(hooks=[note])]},  # type: ignore[list-item]
    )


def nested(inner: str, *after: tuple[str, dict[str, Any]], background: bool = False) -> str:
    """The main model's line: start the dispatcher, which runs the ``inner`` Agent line, then ``after``."""
    launch = json.loads(inner.removeprefix("CALL Agent "))
    return agent_call(DISPATCHER, ("Agent", launch), *after, background=background)


def agent_calls(bodies: list[dict[str, Any]]) -> list[str]:
    """The ids of the Agent calls the model of these conversations made."""
    return [u["id"] for u in tool_uses(bodies) if u["name"] == "Agent"]


async def test_a_nested_subagent_is_held_inline_decided_audited_and_linked_to_the_subagent_that_started_it(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: dict[str, str],
    exact_end: float,
) -> None:
    no_listing = PolicyRule(
        name="cleaner-does-not-list",
        verdict=VerdictKind.DENY,
        tool="list_tickets",
        agents=(CLEANER,),
        reason=NO_LISTING,
    )
    queue.policy = queue.policy.model_copy(update={"rules": (no_listing, *queue.policy.rules)})
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)  # a deferring gate
    watching = reviewer(queue, lambda r: Approve() if r.call.args == {"id": "t3"} else Reject(message=REJECTION))
    cleaner_calls: tuple[tuple[str, dict[str, Any]], ...] = (
        ("delete_ticket", {"id": "t3"}),
        ("delete_ticket", {"id": "t1"}),
        ("delete_ticket", {"id": "prod-1"}),
        ("list_tickets", {}),
    )
    inner = agent_call(CLEANER, *cleaner_calls, background=False)
    outer = nested(inner, ("list_tickets", {}))
    done = await asyncio.wait_for(gate.run(outer), exact_end)
    # Asked about the two deletes the policy leaves to a person, by the nested subagent's name; never
    # about prod-1 or the listing, which the policy denies.
    assert await stop(watching) == [f'{CLEANER} {{"id": "t3"}}', f'{CLEANER} {{"id": "t1"}}']
    assert isinstance(done, Finished)
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []  # held inline, never deferred
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert (tickets.delete_runs("t3"), tickets.delete_runs("t1"), tickets.delete_runs("prod-1")) == (1, 0, 0)

    # The nested subagent read the reviewer's words and the policy's reasons, verbatim.
    dispatcher_bodies, cleaner_bodies = conversation(messages_api, outer), conversation(messages_api, inner)
    assert told(cleaner_bodies) == [
        (False, "deleted ticket t3"),
        (True, REJECTION),
        (True, f"PreToolUse:mcp__tickets__delete_ticket hook error: {PROTECTED}"),
        (True, f"PreToolUse:mcp__tickets__list_tickets hook error: {NO_LISTING}"),
    ]
    # The dispatcher was offered Agent (its definition lists it); its own listing is not the cleaner's.
    assert "Agent" in tools_offered(dispatcher_bodies)
    assert told(dispatcher_bodies)[-1] == (False, "prod-1 t1 t2")

    # Named by type, with the invocation and the subagent (and Agent call) that started it.
    [main_launch] = agent_calls([b for b in messages_api.requests if b not in dispatcher_bodies + cleaner_bodies])
    [nested_launch] = agent_calls(dispatcher_bodies)
    approved, rejected = queue.list_requests(RequestQuery(newest_first=False)).items
    for request in (approved, rejected):
        assert (request.call.agent, request.call.run) == (CLEANER, done.run)
        assert {k: request.call.context.get(k) for k in ("agent_id", "parent_agent", "parent_agent_id")} == {
            "agent_id": started[CLEANER],
            "parent_agent": DISPATCHER,
            "parent_agent_id": started[DISPATCHER],
        }
        assert request.call.context["parent_tool_use_id"] == nested_launch
        assert request.status is (RequestStatus.APPLIED if request is approved else RequestStatus.REJECTED)
    executed = [
        (e.request_id, e.payload["ran"], e.payload["error"]) for e in queue.events() if e.kind in ("ran", "not_run")
    ]
    assert executed == [(approved.id, True, None), (rejected.id, False, None)]  # each once
    assert [e.payload["result"] for e in queue.events(request_id=rejected.id) if e.kind in ("ran", "not_run")] == [
        REJECTION
    ]

    # The policy's verdicts, each recorded once with who made the call and who started that agent.
    verdicts = [
        (e.kind, e.payload["tool"], e.payload["agent"], context_of(e.payload).get("parent_agent"))
        for e in queue.events()
        if e.kind.startswith("auto_")
    ]
    assert verdicts == [
        ("auto_allowed", "Agent", MAIN, None),
        ("auto_allowed", "Agent", DISPATCHER, MAIN),
        ("auto_denied", "delete_ticket", CLEANER, DISPATCHER),
        ("auto_denied", "list_tickets", CLEANER, DISPATCHER),
        ("auto_allowed", "list_tickets", DISPATCHER, MAIN),  # the agent condition names the cleaner only
    ]
    dispatcher_launch = next(e.payload for e in queue.events() if e.payload.get("agent") == DISPATCHER)
    assert dispatcher_launch["call_id"] == nested_launch
    assert context_of(dispatcher_launch)["agent_id"] == started[DISPATCHER]
    assert context_of(dispatcher_launch)["parent_tool_use_id"] == main_launch


async def test_a_background_nested_subagent_outlives_its_parent_and_an_approval_given_then_still_runs(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: dict[str, str],
    exact_end: float,
) -> None:
    # The dispatcher starts the cleaner in the background and finishes; the cleaner's delete waits for a
    # reviewer who answers only then. The CLI tells the main agent when the cleaner is done, in a turn of
    # its own, and the run is read to that turn's end.
    stopped: list[str] = []

    async def note_stop(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        stopped.append(str(data["agent_type"]))
        return {}

    options = replace(options, hooks={**(options.hooks or {}), "SubagentStop": [HookMatcher(hooks=[note_stop])]})  # type: ignore[list-item]
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)

    async def approve_once_the_dispatcher_is_done() -> list[str]:
        seen: list[str] = []
        while not seen:
            for request in queue.pending() if DISPATCHER in stopped else ():
                seen.append(f"{request.call.agent} {json.dumps(request.call.args)}")
                queue.decide(request.id, Approve(), reviewer="ann")
            await asyncio.sleep(0.02)
        return seen

    inner = agent_call(CLEANER, ("delete_ticket", {"id": "t3"}))
    launch = json.loads(inner.removeprefix("CALL Agent "))
    outer = agent_call(DISPATCHER, ("Agent", {**launch, "run_in_background": True}), background=False)
    approving = asyncio.ensure_future(approve_once_the_dispatcher_is_done())
    done = await asyncio.wait_for(gate.run(outer), exact_end)
    assert approving.done()
    assert approving.result() == [f'{CLEANER} {{"id": "t3"}}']
    assert stopped == [DISPATCHER, CLEANER]
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1
    assert told(conversation(messages_api, inner)) == [(False, "deleted ticket t3")]
    [request] = queue.list_requests().items
    assert request.status is RequestStatus.APPLIED
    context = request.call.context
    assert (request.call.agent, context["agent_id"], context["parent_agent"], context["parent_agent_id"]) == (
        CLEANER,
        started[CLEANER],
        DISPATCHER,
        started[DISPATCHER],
    )
    # The main agent's last turn is the one the CLI started for the cleaner's notification.
    assert origin_kind(done.result) == "task-notification"


def relay_chain(depth: int, last: str) -> list[str]:
    """The Agent lines of a chain ``relay-1`` -> ... -> ``relay-<depth>``, whose last one runs ``last``."""
    lines = [last]
    for level in range(depth, 0, -1):
        launch = json.loads(lines[0].removeprefix("CALL Agent "))
        lines.insert(0, agent_call(f"relay-{level}", ("Agent", launch), background=False))
    return lines


def with_relays(options: ClaudeAgentOptions, depth: int, tools: list[str]) -> ClaudeAgentOptions:
    relay = AgentDefinition(description="Passes the work on.", prompt="You pass work on.", tools=tools)
    relays = {f"relay-{level}": relay for level in range(1, depth + 1)}
    return replace(options, agents={**(options.agents or {}), **relays})


async def test_subagents_nest_three_deep_and_the_third_level_is_not_offered_agent(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: dict[str, str],
) -> None:
    # Pins the CLI's depth limit (2.1.332), so that an upgrade that changes it is noticed: a deeper chain
    # means more agents whose calls crossgate holds inline.
    options = with_relays(options, 3, ["Agent", "mcp__tickets__list_tickets"])
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)
    lines = relay_chain(3, agent_call(CLEANER, ("delete_ticket", {"id": "t3"}), background=False))
    done = await gate.run(lines[0])
    assert isinstance(done, Finished)
    assert list(started) == ["relay-1", "relay-2", "relay-3"]  # the cleaner never started
    assert tickets.delete_runs() == 0
    bodies = [conversation(messages_api, line) for line in lines[:3]]  # relay-1, relay-2, relay-3
    assert ["Agent" in tools_offered(b) for b in bodies] == [True, True, False]
    [(is_error, text)] = told(bodies[2])
    assert is_error and NO_SUCH_AGENT_TOOL in text
    # The launches the CLI ran, each by the agent that made it and linked to the one that started that agent.
    launches = [e.payload for e in queue.events() if e.kind == "auto_allowed" and e.payload["tool"] == "Agent"]
    assert [(p["agent"], context_of(p).get("parent_agent")) for p in launches] == [
        (MAIN, None),
        ("relay-1", MAIN),
        ("relay-2", "relay-1"),
    ]
    assert queue.list_requests().items == []


async def test_a_subagent_the_cli_refuses_to_start_does_not_keep_the_main_agent_held(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: dict[str, str],
) -> None:
    # A third-level subagent whose only tool is Agent would get no tools: the CLI refuses it after its
    # SubagentStart and never sends SubagentStop. The failed launch ends it for crossgate, so the main
    # agent's next call is deferred as usual instead of being held inline (here: until the hold runs out).
    options = with_relays(options, 3, ["Agent"])
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=2.0)
    lines = relay_chain(3, agent_call(CLEANER, ("delete_ticket", {"id": "t3"}), background=False))
    parked = await gate.run("\n".join([lines[0], 'CALL delete_ticket {"id": "t1"}']))
    assert list(started) == ["relay-1", "relay-2", "relay-3"]
    [(is_error, text)] = told(conversation(messages_api, lines[1]))  # relay-2 tried to start relay-3
    assert is_error and "would be spawned with zero tools" in text
    assert isinstance(parked, Parked)
    [request] = [queue.get(r) for r in parked.request_ids]
    assert (request.call.agent, request.call.args, request.status) == (MAIN, {"id": "t1"}, RequestStatus.PENDING)
    queue.decide(request.id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert (tickets.delete_runs("t1"), tickets.delete_runs("t3")) == (1, 0)

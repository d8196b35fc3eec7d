"""A main thread run as a named agent (the CLI's ``--agent``) through the real bundled CLI, offline.

SDK 0.2.189 has no option for it; ``ClaudeAgentOptions(extra_args={"agent": name})`` passes the flag,
and the CLI finds agents given with ``agents=``. The CLI then reports ``agent_type`` (no ``agent_id``)
in the main thread's hook inputs, offers only that agent's tools, and keeps a deferred call.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions

from crossgate import (
    Approve,
    ConfigurationError,
    ParkedRunStatus,
    PolicyRule,
    Remember,
    RememberMatch,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from crossgate_claude._agents import MAIN_MISMATCH, NOT_RUN_AS
from crossgate_claude.testing import MessagesAPI, agent_call
from tests.adapters.claude.review import reviewer, stop, told, tools_offered
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

DESK = "desk"
MAIN = "support-desk"
DESK_NO_LISTING = "The desk works from ticket ids the user gives; it does not list tickets."
DELETE_T3 = 'CALL delete_ticket {"id": "t3"}'


@pytest.fixture
def options(cli_options: ClaudeAgentOptions) -> ClaudeAgentOptions:
    """Options whose main thread runs as the ``desk`` agent (which has no Bash)."""
    desk = AgentDefinition(
        description="Handles support tickets.",
        prompt="You handle support tickets.",
        tools=["mcp__tickets__delete_ticket", "mcp__tickets__list_tickets", "Agent"],
    )
    return replace(cli_options, tools=["Bash", "Agent"], agents={DESK: desk}, extra_args={"agent": DESK})


def desk_rule(queue: ReviewQueue) -> None:
    rule = PolicyRule(
        name="desk-does-not-list", verdict=VerdictKind.DENY, tool="list_tickets", agents=(DESK,), reason=DESK_NO_LISTING
    )
    queue.policy = queue.policy.model_copy(update={"rules": (rule, *queue.policy.rules)})


async def test_a_main_thread_run_as_an_agent_is_named_by_it_defers_and_resumes_as_that_agent(
    queue: ReviewQueue, options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    desk_rule(queue)
    gate = Gate(queue, options=options)  # the main agent's name comes from the options
    parked = await gate.run("\n".join(["CALL list_tickets {}", DELETE_T3]))
    # The agent-scoped deny applied to the main thread (never asked); the delete was deferred: the CLI
    # keeps a deferred call of a main thread run as an agent.
    assert isinstance(parked, Parked)
    [request] = [queue.get(r) for r in parked.request_ids]
    assert (request.call.agent, request.call.args, request.status) == (DESK, {"id": "t3"}, RequestStatus.PENDING)
    assert "agent_id" not in request.call.context
    denied = [(e.payload["tool"], e.payload["agent"]) for e in queue.events() if e.kind == "auto_denied"]
    assert denied == [("list_tickets", DESK)]
    assert json.loads(queue.get_parked(parked.parked_run).state)["agent"] == DESK
    assert "Bash" not in tools_offered(messages_api.requests)  # the desk's tools only

    # Resuming with options that run it as another agent is refused before the run is claimed.
    other = replace(options, extra_args={"agent": "ticket-cleaner"})
    with pytest.raises(ConfigurationError, match="runs its main thread as the agent 'desk'"):
        await Gate(queue, options=other).resume(parked.parked_run)
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED

    queue.decide(request.id, Approve(remember=Remember(this_agent_only=True, match=RememberMatch.TOOL)), reviewer="ann")
    before = len(messages_api.requests)
    # Options without --agent: the resume runs the session as the agent it was parked as.
    done = await Gate(queue, options=replace(options, extra_args={})).resume(parked.parked_run)
    assert isinstance(done, Finished)
    resumed = messages_api.requests[before:]
    assert resumed and "Bash" not in tools_offered(resumed)
    assert tickets.delete_runs("t3") == 1
    assert queue.get(request.id).status is RequestStatus.APPLIED
    assert told(messages_api.requests) == [
        (True, f"PreToolUse:mcp__tickets__list_tickets hook error: {DESK_NO_LISTING}"),
        (False, "deleted ticket t3"),
    ]
    [rule] = queue.rules()
    assert (rule.tool, rule.agent, rule.effect) == ("delete_ticket", DESK, VerdictKind.ALLOW)


async def test_a_rule_remembered_for_the_main_agent_covers_that_agent_as_a_subagent_not_another_main_agent(
    queue: ReviewQueue, options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    # Inline (can_use_tool decides while the CLI waits): the desk's delete, approved for the desk only.
    inline = Gate(queue, options=options, defer=False, hold=30.0)
    for_the_agent = Remember(this_agent_only=True, match=RememberMatch.TOOL)
    watching = reviewer(queue, lambda request: Approve(remember=for_the_agent))
    first = await inline.run(DELETE_T3)
    assert await stop(watching) == [f'{DESK} {{"id": "t3"}}']
    assert isinstance(first, Finished)
    [rule] = queue.rules()
    assert rule.agent == DESK

    # Another session whose main thread runs as no agent: it starts the desk as a subagent, then deletes
    # itself. The desk's delete runs on the rule, unasked; the main agent's is asked about.
    plain = replace(options, extra_args={})
    script = "\n".join(
        [agent_call(DESK, ("delete_ticket", {"id": "t2"}), background=False), 'CALL delete_ticket {"id": "t1"}']
    )
    second = await Gate(queue, options=plain, agent=MAIN, subagent_hold=30.0).run(script)
    assert tickets.ids() == ["prod-1", "t1"]
    allowed = [e.payload for e in queue.events() if e.kind == "auto_allowed" and e.payload["tool"] == "delete_ticket"]
    assert [(p["args"], p["agent"], p["rule"]) for p in allowed] == [({"id": "t2"}, DESK, rule.id)]
    assert isinstance(second, Parked)
    [request] = [queue.get(r) for r in second.request_ids]
    assert (request.call.agent, request.call.args, request.status) == (MAIN, {"id": "t1"}, RequestStatus.PENDING)


async def test_a_main_thread_the_cli_does_not_run_as_the_named_agent_is_refused(
    queue: ReviewQueue, options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    # The CLI ignores an --agent that names no agent: the main thread runs with every tool and no agent
    # type. crossgate would otherwise apply the rules of an agent that is not running.
    unknown = replace(options, extra_args={"agent": "no-such-agent"})
    done = await Gate(queue, options=unknown).run("\n".join(["CALL list_tickets {}", DELETE_T3]))
    assert isinstance(done, Finished)
    refusal = NOT_RUN_AS.format(agent="no-such-agent")
    assert told(messages_api.requests) == [
        (True, f"PreToolUse:mcp__tickets__list_tickets hook error: {refusal}"),
        (True, f"PreToolUse:mcp__tickets__delete_ticket hook error: {refusal}"),
    ]
    assert "Bash" in tools_offered(messages_api.requests)  # not run as any agent
    assert queue.list_requests().items == [] and tickets.delete_runs() == 0
    refused = [e.payload for e in queue.events() if e.kind in ("ran", "not_run")]
    assert [(p["ran"], p["result"], p["tool"]) for p in refused] == [
        (False, refusal, "list_tickets"),
        (False, refusal, "delete_ticket"),
    ]


def file_agent(work: Path, name: str) -> None:
    """A project agent in ``.claude/agents`` and a project setting that runs the main thread as it."""
    (work / ".claude" / "agents").mkdir(parents=True)
    front = f"name: {name}\ndescription: Handles tickets.\ntools: mcp__tickets__delete_ticket"
    (work / ".claude" / "agents" / f"{name}.md").write_text(f"---\n{front}\n---\nYou handle tickets.\n")
    (work / ".claude" / "settings.json").write_text(json.dumps({"agent": name}))


async def test_a_main_agent_chosen_by_a_settings_file_is_named_by_it_and_a_different_gate_name_is_refused(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    # The 'agent' setting runs the main thread as an agent defined in .claude/agents, out of crossgate's sight
    # (it does not find agents given with agents=).
    file_agent(Path(str(cli_options.cwd)), "filedesk")
    options = replace(cli_options, setting_sources=["project"])
    named = await Gate(queue, options=options, agent=MAIN).run(DELETE_T3)
    assert isinstance(named, Finished)
    mismatch = MAIN_MISMATCH.format(named=MAIN, running="filedesk")
    assert told(messages_api.requests) == [(True, f"PreToolUse:mcp__tickets__delete_ticket hook error: {mismatch}")]
    assert queue.list_requests().items == [] and tickets.delete_runs() == 0

    unnamed = await Gate(queue, options=options).run(DELETE_T3)
    assert isinstance(unnamed, Parked)
    [request] = [queue.get(r) for r in unnamed.request_ids]
    assert (request.call.agent, request.status) == ("filedesk", RequestStatus.PENDING)

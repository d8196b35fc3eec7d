"""Subagents (``ClaudeAgentOptions(agents=...)``) through the real bundled CLI, offline.

The main model starts the ``ticket-cleaner`` subagent with the ``Agent`` tool; the subagent's own
conversation is scripted by the prompt it is given (``agent_call``). The CLI drops a call deferred inside
a subagent, so the gate holds those calls inline while the reviewer decides.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, HookMatcher

from crossgate import (
    Approve,
    ParkedRunStatus,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RequestQuery,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI, agent_call, tool_uses
from tests.adapters.claude.conftest import PROTECTED
from tests.adapters.claude.review import conversation, origin_kind, reviewer, stop, told
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

CLEANER = "ticket-cleaner"
MAIN = "support-desk"
REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."
NO_LISTING = "The ticket cleaner works from the ids it is given; it does not list tickets."


@pytest.fixture
def started() -> list[tuple[str, str]]:
    """(agent_id, agent_type) of every subagent invocation, as the CLI's SubagentStart reports it."""
    return []


@pytest.fixture
def options(cli_options: ClaudeAgentOptions, started: list[tuple[str, str]]) -> ClaudeAgentOptions:
    async def note(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        started.append((str(data["agent_id"]), str(data["agent_type"])))
        return {}

    cleaner = AgentDefinition(
        description="Deletes the spam tickets it is given.",
        prompt="You delete the spam tickets you are given.",
        tools=["mcp__tickets__delete_ticket", "mcp__tickets__list_tickets"],
    )
    return replace(
        cli_options,
        tools=["Bash", "Agent"],
        agents={CLEANER: cleaner},
        hooks={"SubagentStart": [HookMatcher(hooks=[note])]},  # type: ignore[list-item]
    )


def subagent(api: MessagesAPI, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The request bodies of the subagent conversation scripted with ``calls``."""
    return conversation(api, agent_call(CLEANER, *calls))


async def test_background_subagent_calls_are_held_inline_approve_runs_once_reject_is_verbatim(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: list[tuple[str, str]],
    exact_end: float,
) -> None:
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)  # a deferring gate, hold 0
    watching = reviewer(queue, lambda r: Approve() if r.call.args == {"id": "t3"} else Reject(message=REJECTION))
    calls = (("delete_ticket", {"id": "t3"}), ("delete_ticket", {"id": "t1"}))
    # The Agent tool's default: a background subagent.
    done = await asyncio.wait_for(gate.run(agent_call(CLEANER, *calls)), exact_end)
    assert await stop(watching) == [f'{CLEANER} {{"id": "t3"}}', f'{CLEANER} {{"id": "t1"}}']
    # Nothing was deferred: the CLI would have dropped the call and a resume would find nothing to re-ask.
    assert isinstance(done, Finished)
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert (tickets.delete_runs("t3"), tickets.delete_runs("t1")) == (1, 0)
    # The subagent itself read the reviewer's words, verbatim, as an error result.
    assert told(subagent(messages_api, *calls)) == [(False, "deleted ticket t3"), (True, REJECTION)]
    # Named by the subagent's type; its invocation id stays in the context for the audit.
    [(agent_id, agent_type)] = started
    [launch] = [u["id"] for u in tool_uses(messages_api.requests) if u["name"] == "Agent"]
    approved, rejected = queue.list_requests(RequestQuery(newest_first=False)).items
    for request in (approved, rejected):
        assert (request.call.agent, request.call.context["agent_id"]) == (agent_type, agent_id) == (CLEANER, agent_id)
        # Started by the main agent's Agent call (the main thread has no invocation id).
        context = request.call.context
        assert (context["parent_agent"], context["parent_tool_use_id"]) == (MAIN, launch)
        assert "parent_agent_id" not in context
        assert request.call.run == done.run  # the parent session
        assert request.status is (RequestStatus.APPLIED if request is approved else RequestStatus.REJECTED)
    executed = [e.payload for e in queue.events(request_id=approved.id) if e.kind in ("ran", "not_run")]
    assert [(p["ran"], p["error"]) for p in executed] == [(True, None)]
    # The gate read the run to its end: the main agent's turn after the subagent's notification.
    assert origin_kind(done.result) == "task-notification"


async def test_policy_inside_a_subagent_denies_without_asking_and_agent_rules_match_its_type(
    queue: ReviewQueue, options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    no_listing = PolicyRule(
        name="cleaner-does-not-list",
        verdict=VerdictKind.DENY,
        tool="list_tickets",
        agents=(CLEANER,),
        reason=NO_LISTING,
    )
    queue.policy = queue.policy.model_copy(update={"rules": (no_listing, *queue.policy.rules)})
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)
    sub_calls: tuple[tuple[str, dict[str, Any]], ...] = (("delete_ticket", {"id": "prod-1"}), ("list_tickets", {}))
    script = "\n".join([agent_call(CLEANER, *sub_calls, background=False), "CALL list_tickets {}"])
    done = await gate.run(script)
    assert isinstance(done, Finished)
    assert queue.list_requests().items == []  # nobody was asked
    assert tickets.delete_runs() == 0
    assert told(subagent(messages_api, *sub_calls)) == [
        (True, f"PreToolUse:mcp__tickets__delete_ticket hook error: {PROTECTED}"),
        (True, f"PreToolUse:mcp__tickets__list_tickets hook error: {NO_LISTING}"),
    ]
    verdicts = [(e.kind, e.payload["tool"], e.payload["agent"]) for e in queue.events() if e.kind.startswith("auto_")]
    assert verdicts == [
        ("auto_allowed", "Agent", MAIN),
        ("auto_denied", "delete_ticket", CLEANER),
        ("auto_denied", "list_tickets", CLEANER),
        ("auto_allowed", "list_tickets", MAIN),  # the agent condition names the subagent, not the main agent
    ]
    assert told(messages_api.requests)[-1] == (False, "prod-1 t1 t2 t3")


async def test_a_rule_remembered_for_the_subagent_covers_its_next_invocation_not_the_main_agent(
    queue: ReviewQueue,
    options: ClaudeAgentOptions,
    messages_api: MessagesAPI,
    tickets: TicketStore,
    started: list[tuple[str, str]],
) -> None:
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)
    watching = reviewer(queue, lambda r: Approve(remember=Remember(this_agent_only=True, match=RememberMatch.TOOL)))
    first = await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "t3"}), background=False))
    assert await stop(watching) == [f'{CLEANER} {{"id": "t3"}}']
    assert isinstance(first, Finished)
    [rule] = queue.rules()
    assert (rule.tool, rule.agent, rule.effect) == ("delete_ticket", CLEANER, VerdictKind.ALLOW)

    # A new session: a new invocation of the subagent, then the main agent deletes too.
    script = "\n".join(
        [agent_call(CLEANER, ("delete_ticket", {"id": "t2"}), background=False), 'CALL delete_ticket {"id": "t1"}']
    )
    second = await gate.run(script)
    assert [agent_type for _, agent_type in started] == [CLEANER, CLEANER]
    assert started[0][0] != started[1][0]  # another invocation id, the same name
    assert tickets.ids() == ["prod-1", "t1"]  # t2 went through on the standing rule, unasked
    allowed = [e.payload for e in queue.events() if e.kind == "auto_allowed" and e.payload["tool"] == "delete_ticket"]
    assert [(p["args"], p["agent"], p["rule"]) for p in allowed] == [({"id": "t2"}, CLEANER, rule.id)]
    # The main agent's delete is asked about, and (no subagent running any more) deferred as usual.
    assert isinstance(second, Parked)
    [request] = [queue.get(r) for r in second.request_ids]
    assert (request.call.agent, request.call.args, request.status) == (MAIN, {"id": "t1"}, RequestStatus.PENDING)
    queue.decide(request.id, Reject(message=REJECTION), reviewer="ann")
    assert isinstance(await gate.resume(second.parked_run), Finished)
    assert tickets.ids() == ["prod-1", "t1"]
    assert told(messages_api.requests)[-1] == (True, REJECTION)


async def test_the_main_agent_is_held_inline_while_a_background_subagent_runs(
    queue: ReviewQueue, options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore, exact_end: float
) -> None:
    # A call the main agent defers while a background subagent runs is lost when the subagent finishes
    # (the CLI wakes the main agent and answers the call "[Tool result missing due to internal error]").
    work = Path(str(options.cwd))
    gate = Gate(queue, options=options, agent=MAIN, subagent_hold=30.0)
    # Both calls wait at the same time: the subagent cannot finish before the main agent's call is made.
    watching = reviewer(queue, lambda request: Approve(), together=2)
    script = "\n".join(
        [agent_call(CLEANER, ("delete_ticket", {"id": "t3"})), 'CALL Bash {"command": "echo main > main.txt"}']
    )
    # The subagent finishes while the main turn runs: the CLI tells the main agent within that turn.
    done = await asyncio.wait_for(gate.run(script), exact_end)
    assert sorted(await stop(watching)) == sorted(
        [f'{CLEANER} {{"id": "t3"}}', f'{MAIN} {{"command": "echo main > main.txt"}}']
    )
    assert isinstance(done, Finished)
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []
    assert (work / "main.txt").read_text() == "main\n"
    assert tickets.delete_runs("t3") == 1
    assert all("Tool result missing" not in text for _, text in told(messages_api.requests))
    assert {r.status for r in queue.list_requests().items} == {RequestStatus.APPLIED}

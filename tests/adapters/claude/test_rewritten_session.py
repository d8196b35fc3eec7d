"""Attacks on what a parked Claude session resumes from: the CLI's session on disk, which the agent can write.

The CLI re-runs the deferred call it keeps in its session, by tool name and input. Crossgate finds the
request by the ``tool_use_id`` alone, so the PreToolUse hook compares the whole call's fingerprint (tool
and input) with the request's before anything else: a renamed or rewritten call is refused there, and
``can_use_tool`` binds the decision to the tool it is asked about as well (``tool=``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, McpSdkServerConfig, create_sdk_mcp_server, tool

from crossgate import Approve, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate_claude import Gate
from crossgate_claude._callbacks import MISMATCH
from crossgate_claude._transcripts import transcript_path
from crossgate_claude.testing import MessagesAPI, all_tool_results, cli_env, result_text
from tests.adapters.claude.fake_cli import World
from tests.adapters.claude.test_gate import calls, parked, told
from tests.conformance.tickets import TicketStore

ASK_ALL = Policy(rules=(PolicyRule(name="ask-all", verdict=VerdictKind.ASK),), default=VerdictKind.ALLOW)
READ = "mcp__tickets__read_ticket"
DELETE = "mcp__tickets__delete_ticket"


def ticket_tools(tickets: TicketStore, reads: list[dict[str, Any]]) -> McpSdkServerConfig:
    """An MCP server with ``read_ticket`` and ``delete_ticket``, of the same schema."""

    @tool("read_ticket", "Read a ticket by id.", {"id": str})
    async def read_ticket(args: dict[str, Any]) -> dict[str, Any]:
        reads.append(args)
        return {"content": [{"type": "text", "text": f"ticket {args['id']}"}]}

    @tool("delete_ticket", "Delete a ticket by id. This cannot be undone.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": tickets.delete(str(args["id"]))}]}

    return create_sdk_mcp_server("tickets", tools=[read_ticket, delete_ticket])


def gate_with_reads(tickets: TicketStore, world: World, reads: list[dict[str, Any]]) -> tuple[Gate, ReviewQueue]:
    """A deferring gate on the CLI double whose MCP server is :func:`ticket_tools`."""
    queue = ReviewQueue(MemoryStore(), ASK_ALL)
    options = ClaudeAgentOptions(mcp_servers={"tickets": ticket_tools(tickets, reads)})
    return Gate(queue, options=options, transport=world.transport, resume_timeout=2.0), queue


def deferred(world: World) -> dict[str, Any]:
    [session] = [s for s in world.sessions.values() if s.deferred is not None]
    assert session.deferred is not None
    return session.deferred


def refusals(queue: ReviewQueue, request_id: str) -> list[str]:
    return [str(e.payload["error"]) for e in queue.events(request_id=request_id) if e.kind == "not_run"]


async def test_an_approved_call_renamed_in_the_session_runs_neither_tool(tickets: TicketStore) -> None:
    world, reads = World(), []
    gate, queue = gate_with_reads(tickets, world, reads)
    outcome = parked(await gate.run(calls(("read_ticket", {"id": "t3"}))))
    [rid] = outcome.request_ids
    queue.decide(rid, Approve(), reviewer="ann")
    deferred(world)["name"] = DELETE  # the agent rewrites the CLI's session file

    await gate.resume(outcome.parked_run)

    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"
    assert reads == []
    assert len(told(world)) == 1 and MISMATCH in told(world)[0], told(world)
    assert refusals(queue, rid) == [MISMATCH]
    queue.close()


async def test_an_approved_calls_input_rewritten_in_the_session_runs_nothing(tickets: TicketStore) -> None:
    world: World = World()
    gate, queue = gate_with_reads(tickets, world, [])
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    [rid] = outcome.request_ids
    queue.decide(rid, Approve(), reviewer="ann")
    deferred(world)["input"] = {"id": "t1"}

    await gate.resume(outcome.parked_run)

    assert tickets.delete_runs() == 0
    assert len(told(world)) == 1 and MISMATCH in told(world)[0], told(world)
    assert refusals(queue, rid) == [MISMATCH]
    queue.close()


@pytest.mark.claude_cli
@pytest.mark.slow
async def test_the_real_cli_resumes_a_transcript_renamed_to_another_tool_and_runs_neither(
    tmp_path: Path, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    """The same attack on the real CLI: the agent renames the deferred call in the session's transcript file."""
    reads: list[dict[str, Any]] = []
    work = tmp_path / "work"
    work.mkdir()
    options = ClaudeAgentOptions(
        env=cli_env(messages_api.base_url, tmp_path / "cli"),
        setting_sources=[],
        cwd=str(work),
        tools=[],
        mcp_servers={"tickets": ticket_tools(tickets, reads)},
    )
    queue = ReviewQueue(MemoryStore(), ASK_ALL)
    gate = Gate(queue, options=options)
    outcome = parked(await gate.run(calls(("read_ticket", {"id": "t3"}))))
    [rid] = outcome.request_ids
    queue.decide(rid, Approve(), reviewer="ann")
    transcript = transcript_path(options.env, outcome.run)
    assert transcript is not None
    text = transcript.read_text()
    assert text.count(f'"{READ}"') >= 1
    transcript.write_text(text.replace(f'"{READ}"', f'"{DELETE}"'))

    await gate.resume(outcome.parked_run)

    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"
    assert reads == []
    results = all_tool_results(messages_api.requests)
    told_text = [result_text(r) for r in results.values()]
    assert len(told_text) == 1 and MISMATCH in told_text[0], told_text
    assert refusals(queue, rid) == [MISMATCH]
    queue.close()

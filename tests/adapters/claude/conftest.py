"""Fixtures for the Claude adapter: the ticket MCP tool, a policy, a fake CLI world, the real CLI offline."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, McpSdkServerConfig, create_sdk_mcp_server, tool

from crossgate import ArgCondition, MatchKind, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate_claude import Gate
from crossgate_claude import _turns as turns
from crossgate_claude.testing import MessagesAPI, cli_env
from tests.adapters.claude.fake_cli import World
from tests.conformance.tickets import TicketStore

PROTECTED = "Ticket prod-1 belongs to production; it is never deleted by an agent. Tell the user."
DANGEROUS = "Recursive deletes outside the build folder are not allowed. Do not retry."

POLICY = Policy(
    rules=(
        PolicyRule(
            name="protect-prod",
            verdict=VerdictKind.DENY,
            tool="delete_ticket",
            where=(ArgCondition(arg="id", kind=MatchKind.EQUALS, value="prod-1"),),
            reason=PROTECTED,
        ),
        PolicyRule(
            name="no-rm-rf-root",
            verdict=VerdictKind.DENY,
            tool="Bash",
            where=(ArgCondition(arg="command", kind=MatchKind.GLOB, pattern="rm -rf /*"),),
            reason=DANGEROUS,
        ),
        PolicyRule(
            name="deletes-need-review", verdict=VerdictKind.ASK, tool="delete_ticket", reason="Deletes are final."
        ),
        PolicyRule(
            name="shell-needs-review", verdict=VerdictKind.ASK, tool="Bash", reason="Shell commands need review."
        ),
        PolicyRule(name="questions", verdict=VerdictKind.ASK, tool="AskUserQuestion", reason="A person answers."),
    ),
    default=VerdictKind.ALLOW,
)


def ticket_server(tickets: TicketStore) -> McpSdkServerConfig:
    """The in-process SDK MCP server with the gated ``delete_ticket`` tool of seed 003.

    With ``$CG_TEST_KILL_IN_TOOL`` set to ``before`` or ``after``, the delete SIGKILLs its own process
    before or after it deletes (a resumer dying inside the tool).
    """

    @tool("delete_ticket", "Delete a ticket by id. This cannot be undone.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        kill = os.environ.get("CG_TEST_KILL_IN_TOOL")
        if kill == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        deleted = tickets.delete(str(args["id"]))
        if kill == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return {"content": [{"type": "text", "text": deleted}]}

    @tool("list_tickets", "List the ticket ids.", {})
    async def list_tickets(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": " ".join(tickets.ids())}]}

    return create_sdk_mcp_server("tickets", tools=[delete_ticket, list_tickets])


@pytest.fixture
def tickets(tmp_path: Path) -> TicketStore:
    store = TicketStore(tmp_path / "tickets.db")
    store.seed(["t1", "t2", "t3", "prod-1"])
    return store


@pytest.fixture
def queue() -> Iterator[ReviewQueue]:
    made = ReviewQueue(MemoryStore(), POLICY)
    yield made
    made.close()


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def fake_options(tickets: TicketStore) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(mcp_servers={"tickets": ticket_server(tickets)})


@pytest.fixture
def gate(queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions) -> Gate:
    """A deferring gate whose sessions run on the in-process CLI double."""
    return Gate(queue, options=fake_options, transport=world.transport, resume_timeout=2.0)


@pytest.fixture
def exact_end(monkeypatch: pytest.MonkeyPatch) -> float:
    """Seconds a run may take; the gate must see its end without falling back on the follow-up wait."""
    monkeypatch.setattr(turns, "FOLLOW_UP_WAIT", 600.0)
    return 60.0


@pytest.fixture
def messages_api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as api:
        yield api


@pytest.fixture
def cli_options(tmp_path: Path, messages_api: MessagesAPI, tickets: TicketStore) -> ClaudeAgentOptions:
    """Options that run the real bundled CLI against the scripted API, isolated under ``tmp_path``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ClaudeAgentOptions(
        env=cli_env(messages_api.base_url, tmp_path / "cli"),
        setting_sources=[],
        cwd=str(work),
        tools=["Bash"],
        mcp_servers={"tickets": ticket_server(tickets)},
    )

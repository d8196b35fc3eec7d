"""One naming rule through the real bundled CLI: a tool is named by its own name, its MCP server is context.

The CLI calls an MCP tool ``mcp__<server>__<tool>``. crossgate names it ``<tool>`` (as every SDK does) and
puts the server in ``context.mcp_server``, so a rule written for ``delete_ticket`` holds whatever server
offers it, and a rule imported from Claude ``settings.json`` (``mcp__github__delete_repo``) tests both.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, McpSdkServerConfig, create_sdk_mcp_server, tool

from crossgate import ArgCondition, MatchKind, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.policy import import_claude_settings
from crossgate.runs import Finished
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI
from tests.adapters.claude.review import told
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]


def ops_server(name: str, tickets: TicketStore) -> McpSdkServerConfig:
    """A server whose tools delete tickets and repositories (repositories are tickets here, named ``repo-*``)."""

    @tool("delete_ticket", "Delete a ticket by id.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": tickets.delete(str(args["id"]))}]}

    @tool("delete_repo", "Delete a repository.", {"name": str})
    async def delete_repo(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": tickets.delete(f"repo-{args['name']}")}]}

    @tool("list_repos", "List the repositories.", {})
    async def list_repos(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": " ".join(tickets.ids())}]}

    return create_sdk_mcp_server(name, tools=[delete_ticket, delete_repo, list_repos])


def calls(*lines: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(f"CALL {name} {json.dumps(args)}" for name, args in lines)


async def test_an_imported_mcp_deny_holds_under_default_allow(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    tickets.seed(["repo-site", "repo-docs"])
    rules = import_claude_settings({"permissions": {"deny": ["mcp__github__delete_repo", "mcp__vault"]}})
    queue = ReviewQueue(MemoryStore(), Policy(rules=tuple(rules), default=VerdictKind.ALLOW))
    options = replace(
        cli_options,
        tools=[],
        mcp_servers={"github": ops_server("github", tickets), "vault": ops_server("vault", tickets)},
    )
    done = await Gate(queue, options=options).run(
        calls(
            ("mcp__github__delete_repo", {"name": "site"}),
            ("mcp__vault__list_repos", {}),
            ("mcp__github__list_repos", {}),
        )
    )
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0, "the imported deny did not hold"
    results = told(messages_api.requests)
    assert results[0][0] is True and "mcp__github__delete_repo forbids this call" in results[0][1]
    assert results[1][0] is True and "mcp__vault forbids this call" in results[1][1]  # the whole server
    assert results[2][0] is False  # another tool of github is not covered
    denied = [e.payload for e in queue.events() if e.kind == "auto_denied"]
    assert [(d["tool"], d["context"]["mcp_server"]) for d in denied] == [  # type: ignore[index]
        ("delete_repo", "github"),
        ("list_repos", "vault"),
    ]
    queue.close()


async def test_a_server_name_with_double_underscores_cannot_bypass_a_tool_deny(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    rules = (
        PolicyRule(name="no-deletes", verdict=VerdictKind.DENY, tool="delete_ticket", reason="Never delete tickets."),
        PolicyRule(
            name="ops-repos-stay",
            verdict=VerdictKind.DENY,
            tool="delete_repo",
            context=(ArgCondition(arg="mcp_server", kind=MatchKind.EQUALS, value="team__ops"),),
            reason="team__ops repositories stay.",
        ),
    )
    tickets.seed(["repo-site"])
    queue = ReviewQueue(MemoryStore(), Policy(rules=rules, default=VerdictKind.ALLOW))
    options = replace(
        cli_options,
        tools=[],
        mcp_servers={"team__ops": ops_server("team__ops", tickets), "team": ops_server("team", tickets)},
    )
    done = await Gate(queue, options=options).run(
        calls(
            ("mcp__team__ops__delete_ticket", {"id": "t3"}),
            ("mcp__team__ops__delete_repo", {"name": "site"}),
            ("mcp__team__delete_ticket", {"id": "t2"}),
        )
    )
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0, "a server named team__ops slipped past the deny"
    results = told(messages_api.requests)
    assert [r[0] for r in results] == [True, True, True]
    assert "Never delete tickets." in results[0][1]
    assert "team__ops repositories stay." in results[1][1]
    denied = [e.payload for e in queue.events() if e.kind == "auto_denied"]
    assert [(d["tool"], d["context"]["mcp_server"]) for d in denied] == [  # type: ignore[index]
        ("delete_ticket", "team__ops"),
        ("delete_repo", "team__ops"),
        ("delete_ticket", "team"),
    ]
    queue.close()

"""The gate warns when the real bundled CLI does not offer the model a tool crossgate gates.

With the CLI's default tool set (``ToolSearch`` among it) the MCP tools are deferred: the model is sent
only ``ToolSearch``, a call by name gets "No such tool available", and nothing is asked. That is how the
Claude README's offline snippet gated nothing before it passed ``tools=[]``. An MCP server that failed to
start offers nothing either.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from crossgate import ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate, ToolNotOfferedWarning
from crossgate_claude.testing import MessagesAPI
from tests.adapters.claude.review import told

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

CALL = 'CALL delete_ticket {"id": "t3"}'


def offered(messages_api: MessagesAPI) -> list[str]:
    """The tools the CLI sent the model in its first request."""
    return [str(t.get("name")) for t in messages_api.requests[0].get("tools", [])]


async def test_mcp_tools_hidden_behind_tool_search_are_warned_about_and_nothing_is_asked(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, queue: ReviewQueue
) -> None:
    gate = Gate(queue, options=replace(cli_options, tools=None))  # the CLI's default tools
    with pytest.warns(ToolNotOfferedWarning) as caught:
        done = await gate.run(CALL)
    [warning] = caught
    assert str(warning.message).startswith(
        "the CLI offers the MCP tools mcp__tickets__delete_ticket, mcp__tickets__list_tickets only through "
        "ToolSearch: a model that calls "
        "one by name before searching for it gets 'No such tool available', and no review is asked."
    )
    assert "tools=[]" in str(warning.message) and "ENABLE_TOOL_SEARCH=false" in str(warning.message)
    # What the warning says is what happened: the model was not offered the tool, and nothing was asked.
    assert "ToolSearch" in offered(messages_api) and "mcp__tickets__delete_ticket" not in offered(messages_api)
    assert isinstance(done, Finished)
    assert queue.list_requests().items == []
    [(is_error, text)] = told(messages_api.requests)
    assert is_error and "No such tool available" in text
    with warnings.catch_warnings():  # once per gate: a second run says nothing new
        warnings.simplefilter("error", ToolNotOfferedWarning)
        await gate.run(CALL)


async def test_tools_offered_directly_are_gated_and_not_warned_about(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, queue: ReviewQueue
) -> None:
    for tools in ([], ["Bash"]):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ToolNotOfferedWarning)
            outcome = await Gate(queue, options=replace(cli_options, tools=tools)).run(CALL)
        assert isinstance(outcome, Parked), tools
        assert "mcp__tickets__delete_ticket" in offered(messages_api)
        messages_api.requests.clear()


async def test_tool_search_turned_off_offers_the_tools_and_says_nothing(
    cli_options: ClaudeAgentOptions, queue: ReviewQueue
) -> None:
    options = replace(cli_options, tools=None, env={**cli_options.env, "ENABLE_TOOL_SEARCH": "false"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolNotOfferedWarning)
        outcome = await Gate(queue, options=options).run(CALL)
    assert isinstance(outcome, Parked)


async def test_an_mcp_server_that_failed_to_start_is_warned_about(
    cli_options: ClaudeAgentOptions, queue: ReviewQueue
) -> None:
    broken = {"type": "stdio", "command": "/nonexistent/crossgate-test-mcp-server"}
    options = replace(cli_options, mcp_servers={**cli_options.mcp_servers, "billing": broken})  # type: ignore[dict-item]
    with pytest.warns(ToolNotOfferedWarning, match="MCP server 'billing' is failed: none of its tools is offered"):
        outcome = await Gate(queue, options=options).run(CALL)
    assert isinstance(outcome, Parked), "the tools of the servers that started are gated as ever"

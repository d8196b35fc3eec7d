"""A Claude Agent SDK agent whose deletes wait for a person: the delete-ticket scenario of seed 003.

    python examples/claude_agent_tickets.py

The agent is asked to delete ticket t3 (spam) and then t1. crossgate's policy sends every
``delete_ticket`` call to the review queue; the run parks (the CLI's PreToolUse hook defers the call and
the session id is stored), a reviewer decides, and the session is resumed with the decision. The
scripted reviewer here approves t3 and rejects everything else with a message the model reads.

Without ``ANTHROPIC_API_KEY`` it runs offline: the bundled Claude Code CLI talks to a scripted Messages
API on 127.0.0.1 (``crossgate_claude.testing``), with its config, home and temp files in a
temporary folder. With the key set it uses the real API and model.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

from crossgate import Approve, Policy, PolicyRule, Reject, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority  # signs in this process; its gates verify with it
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate

REJECTION = "A person rejected this delete: only spam tickets may be deleted. Do not retry it."
POLICY = Policy(
    rules=(PolicyRule(name="deletes-need-a-person", verdict=VerdictKind.ASK, tool="delete_ticket"),),
    default=VerdictKind.ALLOW,
)
LIVE_PROMPT = "Delete ticket t3, which is spam, and then ticket t1. Use the delete_ticket tool once per ticket."
OFFLINE_PROMPT = 'CALL delete_ticket {"id": "t3"}\nCALL delete_ticket {"id": "t1"}'


class Tickets:
    """The ticket table, in memory."""

    def __init__(self) -> None:
        self.ids = ["t1", "t2", "t3"]
        self.deleted: list[str] = []

    def delete(self, ticket_id: str) -> str:
        if ticket_id not in self.ids:
            return f"ticket {ticket_id} does not exist"
        self.ids.remove(ticket_id)
        self.deleted.append(ticket_id)
        return f"deleted ticket {ticket_id}"


def agent_options(tickets: Tickets, folder: Path, env: dict[str, str]) -> ClaudeAgentOptions:
    """The agent: one in-process MCP tool, no built-in tools, no settings files."""

    @tool("delete_ticket", "Delete a ticket by id. This cannot be undone.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": tickets.delete(str(args["id"]))}]}

    work = folder / "work"
    work.mkdir(exist_ok=True)
    return ClaudeAgentOptions(
        mcp_servers={"tickets": create_sdk_mcp_server("tickets", tools=[delete_ticket])},
        tools=[],
        setting_sources=[],
        cwd=str(work),
        env=env,
        system_prompt="You are a support agent. You delete tickets when asked.",
    )


async def run_scenario(folder: Path, env: dict[str, str], prompt: str) -> dict[str, Any]:
    """Run the agent, decide each parked request like a reviewer would, resume until the run finishes."""
    tickets = Tickets()
    queue = ReviewQueue(open_store(str(folder / "crossgate.db")), POLICY, authority=Authority.generate())
    log: list[str] = []
    try:
        gate = Gate(queue, options=agent_options(tickets, folder, env))
        outcome = await gate.run(prompt)
        while isinstance(outcome, Parked):
            for request_id in outcome.request_ids:
                request = queue.get(request_id)
                args = json.dumps(request.call.args)
                approve = request.call.args.get("id") == "t3"
                queue.decide(request_id, Approve() if approve else Reject(message=REJECTION), reviewer="ann")
                verdict = "approved" if approve else "rejected"
                log.append(f"asked: {request.call.tool} {args}, tickets now {' '.join(tickets.ids)}, {verdict}")
            outcome = await gate.resume(outcome.parked_run)
        assert isinstance(outcome, Finished)
        return {"log": log, "deleted": tickets.deleted, "left": tickets.ids, "final": outcome.result.result}
    finally:
        queue.close()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the scenario (offline unless ANTHROPIC_API_KEY is set), print it, and return the summary."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crossgate-claude-")))
        if os.environ.get("ANTHROPIC_API_KEY"):
            env: dict[str, str] = {}
            prompt = LIVE_PROMPT
        else:
            from crossgate_claude.testing import MessagesAPI, cli_env

            api = stack.enter_context(MessagesAPI())
            env, prompt = cli_env(api.base_url, folder / "cli"), OFFLINE_PROMPT
        summary = asyncio.run(run_scenario(folder, env, prompt))
    for line in summary["log"]:
        print(f"  {line}")
    print(f"  deleted: {' '.join(summary['deleted']) or '-'}, left: {' '.join(summary['left'])}")
    return summary


if __name__ == "__main__":
    main()

"""Delete spam tickets with the OpenAI Agents SDK behind crossgate: the run parks, a person decides, it resumes.

Offline by default: the SDK's own ``ScriptedModel`` asks to delete t3 (spam), then t1 (a real ticket).
With ``OPENAI_API_KEY`` set, a real model reads the tickets and does the asking.

    python examples/openai_agents_tickets.py

The reviewer here is a function that approves deleting t3 and rejects anything else; in a real
deployment people decide from the web page, the HTTP API or ``crossgate approve|reject`` while the run
is parked, and any process resumes it with ``Gate(queue, sdk_agent=build_agent(...)).resume(parked_run)``.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel
from agents.testing.model import assistant_message, function_call

from crossgate import Approve, Policy, PolicyRule, Reject, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority  # signs in this process; its gates verify with it
from crossgate.runs import Finished
from crossgate_openai import Gate

TICKETS = {"t1": "Refund request for order 1182", "t2": "Login page is broken", "t3": "WIN A FREE CRUISE!!!"}
POLICY = Policy(
    rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket", reason="Deletes are final."),),
    default=VerdictKind.ALLOW,
)
REJECTION = "A person rejected this delete: it is a real customer ticket. Do not retry it."


def scripted_model() -> ScriptedModel:
    """The offline model: one delete per turn, t3 then t1, then a summary."""
    return ScriptedModel(
        [
            [function_call("delete_ticket", {"id": "t3"}, call_id="call_t3")],
            [function_call("delete_ticket", {"id": "t1"}, call_id="call_t1")],
            [assistant_message("Deleted the spam ticket t3; t1 stays.")],
        ]
    )


def build_agent(tickets: dict[str, str], model: Any) -> Agent[Any]:
    """The triage agent; any process that resumes its runs builds it the same way (same names and tools)."""

    @function_tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return f"deleted ticket {id}" if tickets.pop(id, None) is not None else f"ticket {id} does not exist"

    listing = "; ".join(f"{k}: {v}" for k, v in TICKETS.items())
    instructions = f"Tickets: {listing}. Delete spam tickets with delete_ticket, one call at a time."
    return Agent(name="Triage agent", instructions=instructions, tools=[delete_ticket], model=model)


def reviewer(args: dict[str, Any]) -> Approve | Reject:
    """Stands in for a person: yes to the spam ticket, no to anything else."""
    return Approve() if args.get("id") == "t3" else Reject(message=REJECTION)


async def demo(db: str, *, offline: bool) -> list[str]:
    """Run the agent to the end through parks and decisions; return what happened, line by line."""
    tickets = dict(TICKETS)
    agent = build_agent(tickets, scripted_model() if offline else "gpt-4.1-mini")
    queue = ReviewQueue(open_store(db), POLICY, authority=Authority.generate())
    lines: list[str] = []
    try:
        outcome = await Gate(queue).run(agent, "Clean up the ticket queue.")
        while not isinstance(outcome, Finished):
            for request in (queue.get(r) for r in outcome.request_ids):
                decision = reviewer(request.call.args)
                queue.decide(request.id, decision, reviewer="demo-reviewer")
                left = " ".join(sorted(tickets))
                lines.append(
                    f"asked: {request.call.tool} {json.dumps(request.call.args)}, tickets now {left}, {decision.kind}"
                )
            # Resume as another process would: a gate bound to the same agent graph.
            outcome = await Gate(queue, sdk_agent=agent).resume(outcome.parked_run)
        lines.append(f"final: {outcome.result.final_output}")
        lines.append(f"left: {' '.join(sorted(tickets))}")
    finally:
        queue.close()
    return lines


def main() -> None:
    """Run the demo on a fresh SQLite store and print what happened."""
    set_tracing_disabled(not os.environ.get("OPENAI_API_KEY"))
    with tempfile.TemporaryDirectory() as folder:
        lines = asyncio.run(demo(str(Path(folder) / "crossgate.db"), offline=not os.environ.get("OPENAI_API_KEY")))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

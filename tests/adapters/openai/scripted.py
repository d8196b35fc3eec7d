"""Fixtures on ``crossgate_openai.testing``: its scripted model, and the seed's delete-ticket agent.

``PlannedModel`` and its helpers are public in ``crossgate_openai.testing``; this module re-exports them
for the adapter's tests and adds the seed's agent and call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents import Agent, function_tool
from agents.models.interface import Model

from crossgate_openai.testing import Call, PlannedModel, outputs_by_call, plain, read_record
from crossgate_openai.testing import tool_results as _tool_results
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

__all__ = [
    "Call",
    "PlannedModel",
    "counting_tool",
    "delete_call",
    "outputs_by_call",
    "plain",
    "read_record",
    "ticket_agent",
    "tool_results",
]


def delete_call(ticket: str) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``."""
    return Call(TOOL, json.dumps({"id": ticket}), f"call_{ticket}")


def tool_results(inputs: Any, tool: str = TOOL) -> list[str]:
    """What the model was told for each call of ``tool`` (the seed's tool by default)."""
    return _tool_results(inputs, tool)


def ticket_agent(tickets: TicketStore, model: Model, *, name: str = "Triage agent") -> Agent[Any]:
    """The seed's agent: one tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""

    @function_tool(name_override=TOOL)
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return tickets.delete(id)

    return Agent(name=name, instructions="Delete spam tickets.", tools=[delete_ticket], model=model)


def counting_tool(name: str, runs: list[dict[str, Any]], output: Callable[[dict[str, Any]], str]) -> Any:
    """A function tool ``name(id: str)`` that appends its arguments to ``runs`` each time its body runs."""

    async def body(ctx: Any, raw: str) -> str:
        args = json.loads(raw)
        runs.append(args)
        return output(args)

    from agents import FunctionTool

    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    return FunctionTool(name=name, description=f"{name} by id", params_json_schema=schema, on_invoke_tool=body)

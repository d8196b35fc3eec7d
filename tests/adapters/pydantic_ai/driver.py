"""The Pydantic AI ticket driver for the shared conformance scenarios (``crossgate.testing``).

The agent is the seed's delete-ticket agent on ``crossgate_pydantic_ai.testing.planned_model``, which
asks for one delete per turn. ``GateTicketDriver`` keeps what a fresh process needs to resume on files under
``workdir`` and gives the command lines that start or resume a run in one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pydantic_ai import Agent
from pydantic_ai.models import Model

from crossgate import DecisionKind, ReviewQueue
from crossgate.adapter import AuthorityPin
from crossgate.model import JsonObject
from crossgate.testing import GateTicketDriver, TicketStore
from crossgate.testing.driver import TOOL
from crossgate.testing.gate_driver import SdkGate, delete_or_die
from crossgate_pydantic_ai import CAPABILITIES, FRAMEWORK, Gate
from crossgate_pydantic_ai.testing import Call, planned_model, tool_results

AGENT = "Triage agent"


def delete_call(ticket: str) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``, args as JSON text."""
    return Call(TOOL, json.dumps({"id": ticket}), f"call_{ticket}")


def ticket_agent(tickets: TicketStore, model: Model, *, name: str = AGENT) -> Agent[None, str]:
    """The seed's agent: one tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""
    # A retry budget above the plan's length: the parity test sends several ids the schema refuses (the SDK
    # answers each with a retry prompt, and by default ends the run after the second).
    agent = Agent(model, name=name, instructions="Delete spam tickets.", retries=5)

    @agent.tool_plain(name=TOOL)
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return delete_or_die(tickets, id)

    return agent


class PydanticAITicketDriver(GateTicketDriver[Agent[None, str]]):
    """The delete-ticket agent on Pydantic AI, behind ``crossgate_pydantic_ai.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)
    schema_refusal: ClassVar[str] = "Input should be a valid string"  # Pydantic AI validates before any gate

    def make_gate(
        self, queue: ReviewQueue, *, authority: AuthorityPin = None, context: JsonObject | None = None
    ) -> SdkGate[Agent[None, str]]:
        return Gate(queue, authority=authority, context=context)

    def build_turns(self, turns: Sequence[Sequence[object]], record: Path) -> Agent[None, str]:
        plan = [[delete_call(t) for t in turn] for turn in turns]
        return ticket_agent(self.tickets, planned_model(plan, record=record))

    def read_tool_results(self, record: Path) -> list[str]:
        return tool_results(record, TOOL)

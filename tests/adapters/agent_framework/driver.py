"""The Agent Framework ticket driver for the shared conformance scenarios (``crossgate.testing``).

The agent is the seed's delete-ticket agent on ``crossgate_agent_framework.testing.planned_client``, which
asks for one delete per turn. ``GateTicketDriver`` keeps what a fresh process needs to resume on files under
``workdir`` and gives the command lines that start or resume a run in one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from agent_framework import Agent, tool

from crossgate import DecisionKind, ReviewQueue
from crossgate.adapter import AuthorityPin
from crossgate.model import JsonObject
from crossgate.testing import GateTicketDriver, TicketStore
from crossgate.testing.driver import TOOL
from crossgate.testing.gate_driver import SdkGate, delete_or_die
from crossgate_agent_framework import CAPABILITIES, FRAMEWORK, Gate
from crossgate_agent_framework.testing import Call, PlannedClient, planned_client, tool_results

AGENT = "Triage agent"


def delete_call(ticket: Any) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``."""
    return Call(TOOL, {"id": ticket}, f"call_{ticket}")


def ticket_agent(tickets: TicketStore, client: PlannedClient, *, name: str = AGENT) -> Agent[Any]:
    """The seed's agent: one tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""

    @tool(name=TOOL)
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return delete_or_die(tickets, id)

    return Agent(client=client, name=name, instructions="Delete spam tickets.", tools=[delete_ticket])


class AgentFrameworkTicketDriver(GateTicketDriver[Agent[Any]]):
    """The delete-ticket agent on Microsoft Agent Framework, behind ``crossgate_agent_framework.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)

    def make_gate(
        self, queue: ReviewQueue, *, authority: AuthorityPin = None, context: JsonObject | None = None
    ) -> SdkGate[Agent[Any]]:
        return Gate(queue, authority=authority, context=context)

    def build_turns(self, turns: Sequence[Sequence[object]], record: Path) -> Agent[Any]:
        plan = [[delete_call(t) for t in turn] for turn in turns]
        return ticket_agent(self.tickets, planned_client(plan, record=record))

    def read_tool_results(self, record: Path) -> list[str]:
        return tool_results(record, TOOL)

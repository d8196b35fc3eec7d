"""The Strands ticket driver for the shared conformance scenarios (``crossgate.testing``).

The agent is the seed's delete-ticket agent on ``crossgate_strands.testing.planned_model``, which asks for one
delete per turn. ``GateTicketDriver`` keeps what a fresh process needs to resume on files under ``workdir``
and gives the command lines that start or resume a run in one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from strands import Agent, tool
from strands.types.tools import AgentTool

from crossgate import DecisionKind, ReviewQueue
from crossgate.adapter import AuthorityPin
from crossgate.model import JsonObject
from crossgate.testing import GateTicketDriver, TicketStore
from crossgate.testing.driver import TOOL
from crossgate.testing.gate_driver import SdkGate, delete_or_die
from crossgate_strands import CAPABILITIES, FRAMEWORK, Gate
from crossgate_strands.testing import Call, PlannedModel, planned_model, tool_results

AGENT = "triage_agent"


def delete_call(ticket: Any) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``."""
    return Call(TOOL, {"id": ticket}, f"call_{ticket}")


def delete_tool(tickets: TicketStore) -> AgentTool:
    """The seed's tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""

    @tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return delete_or_die(tickets, id)

    return delete_ticket  # type: ignore[no-any-return]


def ticket_agent(tickets: TicketStore, model: PlannedModel, *, name: str = AGENT, tools: Sequence[Any] = ()) -> Agent:
    """The seed's agent: ``delete_ticket`` (and ``tools``), on the scripted model."""
    return Agent(
        name=name,
        model=model,
        system_prompt="Delete spam tickets.",
        tools=[*tools, delete_tool(tickets)],
        callback_handler=None,
    )


class StrandsTicketDriver(GateTicketDriver[Agent]):
    """The delete-ticket agent on Strands Agents, behind ``crossgate_strands.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)

    def make_gate(
        self, queue: ReviewQueue, *, authority: AuthorityPin = None, context: JsonObject | None = None
    ) -> SdkGate[Agent]:
        return Gate(queue, authority=authority, context=context)

    def build_turns(self, turns: Sequence[Sequence[object]], record: Path) -> Agent:
        plan = [[delete_call(t) for t in turn] for turn in turns]
        return ticket_agent(self.tickets, planned_model(plan, record=record))

    def read_tool_results(self, record: Path) -> list[str]:
        return tool_results(record, TOOL)

"""The Google ADK ticket driver for the shared conformance scenarios (``crossgate.testing``).

The agent is the seed's delete-ticket agent on ``crossgate_google_adk.testing.planned_llm``, which asks for
one delete per turn. ``GateTicketDriver`` keeps what a fresh process needs to resume on files under
``workdir`` and gives the command lines that start or resume a run in one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from google.adk.agents import LlmAgent

from crossgate import DecisionKind, ReviewQueue
from crossgate.adapter import AuthorityPin
from crossgate.model import JsonObject
from crossgate.testing import GateTicketDriver, TicketStore
from crossgate.testing.driver import TOOL
from crossgate.testing.gate_driver import SdkGate, delete_or_die
from crossgate_google_adk import CAPABILITIES, FRAMEWORK, Gate
from crossgate_google_adk.testing import Call, PlannedLlm, planned_llm, tool_results

AGENT = "triage_agent"


def delete_call(ticket: Any) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``."""
    return Call(TOOL, {"id": ticket}, f"call_{ticket}")


def delete_tool(tickets: TicketStore) -> Callable[[str], str]:
    """The seed's tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""

    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return delete_or_die(tickets, id)

    return delete_ticket


def ticket_agent(tickets: TicketStore, model: PlannedLlm, *, name: str = AGENT, tools: Sequence[Any] = ()) -> LlmAgent:
    """The seed's agent: ``delete_ticket`` (and ``tools``), on the scripted model."""
    return LlmAgent(name=name, model=model, instruction="Delete spam tickets.", tools=[*tools, delete_tool(tickets)])


class GoogleAdkTicketDriver(GateTicketDriver[LlmAgent]):
    """The delete-ticket agent on Google ADK, behind ``crossgate_google_adk.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)

    def make_gate(
        self, queue: ReviewQueue, *, authority: AuthorityPin = None, context: JsonObject | None = None
    ) -> SdkGate[LlmAgent]:
        return Gate(queue, authority=authority, context=context)

    def build_turns(self, turns: Sequence[Sequence[object]], record: Path) -> LlmAgent:
        plan = [[delete_call(t) for t in turn] for turn in turns]
        return ticket_agent(self.tickets, planned_llm(plan, record=record))

    def read_tool_results(self, record: Path) -> list[str]:
        return tool_results(record, TOOL)

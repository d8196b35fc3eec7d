"""The Agent Framework adapter passes ``AdapterContract`` and ``GateContract``, subclassed as a third party would."""

from __future__ import annotations

from crossgate.testing import AdapterContract, GateContract
from tests.adapters.agent_framework.driver import AgentFrameworkTicketDriver


class TestAgentFrameworkContract(AdapterContract):
    driver_class = AgentFrameworkTicketDriver


class TestAgentFrameworkGate(GateContract):
    driver_class = AgentFrameworkTicketDriver

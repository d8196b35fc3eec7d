"""The Pydantic AI adapter passes ``AdapterContract`` and ``GateContract``, subclassed as a third party would."""

from __future__ import annotations

from crossgate.testing import AdapterContract, GateContract
from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver


class TestPydanticAIContract(AdapterContract):
    driver_class = PydanticAITicketDriver


class TestPydanticAIGate(GateContract):
    driver_class = PydanticAITicketDriver

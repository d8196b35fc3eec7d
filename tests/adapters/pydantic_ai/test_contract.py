"""The Pydantic AI adapter passes ``AdapterContract``, subclassed as a third party would."""

from __future__ import annotations

from crossgate.testing import AdapterContract
from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver


class TestPydanticAIContract(AdapterContract):
    driver_class = PydanticAITicketDriver

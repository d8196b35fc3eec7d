"""Fail closed when the store fails, through Pydantic AI's own agent loop: ``StoreFailureContract``.

A crossgate error raised in crossgate's toolset ends the run; the SDK does not hand it to the model.
"""

from __future__ import annotations

from crossgate.testing import StoreFailureContract
from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver


class TestPydanticAIStoreFailures(StoreFailureContract):
    driver_class = PydanticAITicketDriver

"""The OpenAI Agents SDK adapter passes ``AdapterContract``, subclassed as a third party would."""

from __future__ import annotations

from crossgate.testing import AdapterContract
from tests.adapters.openai.driver import OpenAITicketDriver


class TestOpenAIContract(AdapterContract):
    driver_class = OpenAITicketDriver

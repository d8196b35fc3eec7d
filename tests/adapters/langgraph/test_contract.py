"""The LangGraph adapter passes ``AdapterContract`` twice: as a plain graph and as LangChain's ``create_agent``."""

from __future__ import annotations

from crossgate.testing import AdapterContract
from tests.adapters.langgraph.driver import LangChainTicketDriver, LangGraphTicketDriver


class TestLangGraphContract(AdapterContract):
    driver_class = LangGraphTicketDriver


class TestLangChainContract(AdapterContract):
    driver_class = LangChainTicketDriver

"""Fail closed when the store fails, through the SDK's own function-invocation loop: ``StoreFailureContract``.

The SDK turns a middleware's exception into a tool result; crossgate's own errors end the run instead.
"""

from __future__ import annotations

from crossgate.testing import StoreFailureContract
from tests.adapters.agent_framework.driver import AgentFrameworkTicketDriver


class TestAgentFrameworkStoreFailures(StoreFailureContract):
    driver_class = AgentFrameworkTicketDriver

"""The Claude Agent SDK adapter passes ``AdapterContract`` on the real bundled CLI, subclassed as a third party would.

The driver cannot express respond (its capabilities say so), so the respond scenario is skipped with that reason.
"""

from __future__ import annotations

from crossgate.testing import AdapterContract
from tests.adapters.claude.driver import ClaudeTicketDriver


class TestClaudeContract(AdapterContract):
    driver_class = ClaudeTicketDriver

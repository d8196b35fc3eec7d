"""The scenario driver an adapter implements, now public in the conformance kit: ``crossgate.testing``."""

from __future__ import annotations

from crossgate.testing.driver import TOOL, TicketAgentDriver

__all__ = ["TOOL", "TicketAgentDriver"]

"""The delete-ticket world of seed 003, now public in the conformance kit: ``crossgate.testing.tickets``."""

from __future__ import annotations

from crossgate.testing.tickets import DEFAULT_TICKETS, TicketStore

__all__ = ["DEFAULT_TICKETS", "TicketStore"]

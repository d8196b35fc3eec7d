"""Fixtures for the Pydantic AI adapter tests: the kit's gate world (a SQLite-backed queue, the seed's tickets)."""

from __future__ import annotations

from crossgate.testing.gate_world import REJECTION, db_url, make_queue, queue, tickets

__all__ = ["REJECTION", "db_url", "make_queue", "queue", "tickets"]

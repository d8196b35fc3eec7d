"""Fixtures for the Strands adapter tests: the kit's gate world (a SQLite-backed queue, the seed's tickets).

Strands needs other versions of opentelemetry and mcp than Google ADK, so it has a venv of its own,
``.venv-strands`` (crossgate core, this adapter and the test tools only; see the Makefile): every test
module here starts with ``pytest.importorskip("strands")``, so the main venv skips them. Nothing here (nor
in tests/conftest.py) may import what only the main venv holds.
"""

from __future__ import annotations

from crossgate.testing.gate_world import REJECTION, db_url, make_queue, queue, tickets

__all__ = ["REJECTION", "db_url", "make_queue", "queue", "tickets"]

"""Resumers for ``crossgate worker --app tests.server.worker_app:resumers``: the demo's stand-in agents."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from crossgate import ReviewQueue

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

from demo_agents import SPECS, DemoTickets, SyntheticAgent  # noqa: E402


def resumers(queue: ReviewQueue) -> list[SyntheticAgent]:
    tickets = DemoTickets(Path(os.environ["DEMO_TICKETS"]))
    return [SyntheticAgent(queue, tickets, spec) for spec in SPECS]


not_a_resumer = 42

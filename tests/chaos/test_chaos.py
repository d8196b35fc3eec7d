"""Chaos: SIGKILL a random process during submit, decide, resume or inside the tool; every run recovers.

For the OpenAI adapter, the LangGraph adapter (a graph whose node asks ``request_approval``) and the
LangChain middleware (``create_agent``), on SQLite and PostgreSQL: 30 iterations each, one kill per
iteration (see ``tests/chaos/loop.py`` for where the kills land, how each is recovered and what is
counted). Bounded twice: the loop starts no iteration after ``SECONDS``, and pytest-timeout ends the
test at ``HARD_CAP``. ``tests/benchmarks/bench_chaos.py`` runs the same loop longer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.agents import ADAPTERS
from tests.chaos.loop import PHASES, chaos, preload
from tests.support.postgres import database_url

ITERATIONS = 30
SECONDS = 150.0
HARD_CAP = 300

pytestmark = [pytest.mark.slow, pytest.mark.timeout(HARD_CAP)]


@pytest.fixture(scope="module", autouse=True)
def _fork_server() -> None:
    preload()


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_no_kill_loses_doubles_or_strands_a_call(adapter: str, kind: str, tmp_path: Path) -> None:
    with database_url(kind, tmp_path) as db:
        counts = chaos(adapter, db, tmp_path, ITERATIONS, seed=ADAPTERS.index(adapter), seconds=SECONDS)
    report = "\n".join([counts.summary(), *counts.notes])
    assert (counts.lost, counts.twice, counts.unapproved, counts.stuck) == (0, 0, 0, 0), report
    assert counts.iterations >= ITERATIONS // 2, report
    assert all(counts.kills[phase] for phase in PHASES), report  # every phase was killed at least once
    assert counts.recovered == sum(counts.kills.values()), report

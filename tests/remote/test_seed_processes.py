"""The seed scenario with every party in its own process, the agent's holding no store URL.

An agent process starts the run and parks on "delete t3"; a reviewer approves it with the CLI (on the
store); another agent process resumes, deletes t3 and parks on "delete t1"; the reviewer rejects that over
the HTTP API; a third agent process resumes and the model reads the rejection, word for word.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from crossgate import ReviewQueue, open_store
from crossgate.testing.adapters import ASK_POLICY, REJECTION
from crossgate.testing.postgres import database_url
from crossgate.testing.tickets import TicketStore
from tests.adapters.openai.driver import OpenAITicketDriver
from tests.remote.processes import agent, agent_env
from tests.remote.server import REVIEWERS, SERVE, LiveServer

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as url:
        yield url


def test_seed_scenario_in_separate_processes_over_http(tmp_path: Path, db: str) -> None:
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    agents = tmp_path / "agent"
    agents.mkdir()
    with LiveServer(tmp_path, db, ASK_POLICY) as server:
        assert db not in " ".join(agent_env().values()), "the agent processes are not told where the store is"
        first = agent(server.url, agents, tickets.path, "start", "--run", "run-seed", "t3", "t1")
        queue = ReviewQueue(open_store(db), ASK_POLICY)  # the reviewer's side
        try:
            [t3] = first["request_ids"]
            assert queue.get(t3).call.args == {"id": "t3"} and tickets.ids() == ["t1", "t2", "t3"]
            approve = [sys.executable, "-c", SERVE, "--db", db, "approve", t3, "--reviewer", "ann"]
            approved = subprocess.run(approve, capture_output=True, text=True, timeout=60, check=False)
            assert approved.returncode == 0, approved.stderr

            second = agent(server.url, agents, tickets.path, "resume", first["parked_run"])
            [t1] = second["request_ids"]
            assert tickets.ids() == ["t1", "t2"] and tickets.delete_runs("t3") == 1
            assert queue.get(t1).call.args == {"id": "t1"}
            reject = {"kind": "reject", "message": REJECTION}
            headers = {"Authorization": f"Bearer {REVIEWERS['ann']}"}
            decided = httpx.post(f"{server.url}/api/requests/{t1}/decision", json=reject, headers=headers)
            assert decided.status_code == 200, decided.text

            third = agent(server.url, agents, tickets.path, "resume", second["parked_run"])
            assert third == {"finished": "run-seed"}
            assert tickets.ids() == ["t1", "t2"] and tickets.delete_runs("t1") == 0
            results = OpenAITicketDriver(queue, tickets, agents, server.url).tool_results("run-seed")
            assert results == ["deleted ticket t3", REJECTION], "the model read the reviewer's message verbatim"
            for rid in (t3, t1):
                events = queue.events(request_id=rid)
                assert {(e.actor, e.channel) for e in events if e.kind in ("submitted", "applied")} == {
                    ("ticket-agent", "agent-api")
                }
            assert [p.status.value for p in queue.parked_runs(statuses=())] == ["resumed", "resumed"]
        finally:
            queue.close()

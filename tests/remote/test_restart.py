"""Killing ``crossgate serve`` while agents wait on it loses nothing, and each agent goes on exactly once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgate import Approve, ReviewQueue, ToolCall, open_store
from crossgate.adapter import run_checked
from crossgate.remote import RemoteQueue
from crossgate.testing.adapters import ASK_POLICY
from crossgate.testing.postgres import database_url
from crossgate.testing.tickets import TicketStore
from tests.remote.processes import DRIVER, agent, agent_env
from tests.remote.server import AGENT_TOKEN, LiveServer

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as url:
        yield url


def test_a_wait_rides_out_a_crash_and_the_call_runs_once(tmp_path: Path, db: str) -> None:
    call = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "t3"}, call_id="c1", run="run-k")
    ran: list[object] = []

    async def tool(args: dict[str, object]) -> str:
        ran.append(args)
        return "deleted t3"

    with LiveServer(tmp_path, db, ASK_POLICY) as server:
        reviewer = ReviewQueue(open_store(db), ASK_POLICY)
        try:
            with RemoteQueue(server.url, token=AGENT_TOKEN, retry_seconds=60) as queue:
                queue.submit(call, request_id="req-k")

                async def scenario() -> tuple[bool, bool]:
                    waiter = asyncio.create_task(queue.wait("req-k", timeout=120))
                    await asyncio.sleep(0.5)
                    server.kill()  # mid long poll
                    assert reviewer.get("req-k").status.value == "pending", "the request was stored before"
                    reviewer.decide("req-k", Approve(), reviewer="ann")  # the CLI needs no server
                    await asyncio.sleep(0.3)
                    assert not waiter.done(), "the agent keeps waiting through the outage"
                    await asyncio.to_thread(server.start)
                    decided = await waiter
                    first = await run_checked(queue, decided, {"id": "t3"}, tool, actor="agent")
                    second = await run_checked(queue, decided, {"id": "t3"}, tool, actor="agent")
                    return first.ran, second.ran

                assert asyncio.run(scenario()) == (True, False)
            assert ran == [{"id": "t3"}]
            kinds = [e.kind for e in reviewer.events(request_id="req-k")]
            assert kinds.count("applied") == 1 and kinds[:3] == ["submitted", "decided", "applied"]
        finally:
            reviewer.close()


def test_a_parked_run_survives_a_crash_and_two_resumers_resume_it_once(tmp_path: Path, db: str) -> None:
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    work = tmp_path / "agent"
    work.mkdir()
    with LiveServer(tmp_path, db, ASK_POLICY) as server:
        parked = agent(server.url, work, tickets.path, "start", "--run", "run-crash", "t3")
        server.kill()
        reviewer = ReviewQueue(open_store(db), ASK_POLICY)
        try:
            [rid] = parked["request_ids"]
            assert reviewer.get(rid).status.value == "pending"
            assert [p.id for p in reviewer.parked_runs()] == [parked["parked_run"]]
            reviewer.decide(rid, Approve(), reviewer="ann")
            server.start()
            argv = ["resume", "--db", server.url, "--tickets", str(tickets.path), "--workdir", str(work)]
            resumers = [
                subprocess.Popen(
                    [sys.executable, "-c", DRIVER, *argv, parked["parked_run"]],
                    env=agent_env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(2)
            ]
            outcomes = [p.communicate(timeout=120) for p in resumers]
            codes = sorted(p.returncode for p in resumers)
            assert codes[0] == 0 and codes[1] != 0, outcomes
            loser = next(err for p, (_, err) in zip(resumers, outcomes, strict=True) if p.returncode != 0)
            assert "ParkedRunClaimedError" in loser
            assert tickets.delete_runs("t3") == 1 and tickets.ids() == ["t1", "t2"]
            assert reviewer.get_parked(parked["parked_run"]).status.value == "resumed"
        finally:
            reviewer.close()

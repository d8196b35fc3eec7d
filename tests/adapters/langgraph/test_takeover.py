"""A resumer SIGKILLed inside the tool: once its lease runs out, another resumer takes the run over.

Real graphs (``ToolNode`` with ``gated_tool_wrapper``) and real ``create_agent`` agents (crossgate's
middleware), on SQLite checkpoints and a SQLite store shared by every process. The kill lands inside
the delete tool, before or after it deletes; the call was marked applied and no outcome was recorded,
so the takeover never runs it again (at most once) and the model is told it may have taken effect.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import (
    Approve,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    ReviewQueue,
    VerdictKind,
    open_store,
)
from crossgate.runs import Finished, Parked
from tests.adapters.langgraph.driver import DRIVERS
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

pytestmark = pytest.mark.slow

POLICY = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool=TOOL),))
LEASE = 1.0
ROOT = Path(__file__).resolve().parents[3]


async def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=ROOT
    )


def crossgate_cli(*args: str) -> list[str]:
    exe = shutil.which("crossgate", path=str(Path(sys.executable).parent))
    assert exe is not None, "the crossgate CLI is not installed in this environment"
    return [exe, *args]


async def wait_until_ready(queue: ReviewQueue, parked_run: str) -> None:
    """Wait (bounded) until the dead resumer's lease ran out and the run is offered again."""
    for _ in range(200):
        if parked_run in [p.id for p in queue.ready_runs()]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"parked run {parked_run} was never offered again")


@pytest.mark.parametrize("kill", ["before", "after"])
@pytest.mark.parametrize("kind", ["langgraph", "langchain"])
async def test_a_resumer_killed_inside_the_tool_is_taken_over_after_its_lease(
    tmp_path: Path, kind: str, kill: str
) -> None:
    db = f"sqlite:///{tmp_path / 'crossgate.db'}"
    queue = ReviewQueue(open_store(db), POLICY)
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    driver = DRIVERS[kind](queue, tickets, tmp_path, db, lease_seconds=LEASE)
    try:
        parked = await driver.start(["t3"], run=f"run-{kind}")
        assert isinstance(parked, Parked)
        [request_id] = parked.request_ids
        queue.decide(request_id, Approve(), reviewer="ann")

        env = {**os.environ, "CG_TEST_KILL_IN_TOOL": kill}
        doomed = await run(driver.resume_command(parked.parked_run), env)
        assert doomed.returncode == -9, doomed.stderr[-2000:]
        assert tickets.delete_runs("t3") == (1 if kill == "after" else 0)
        stuck = queue.get_parked(parked.parked_run)
        assert stuck.status is ParkedRunStatus.RESUMING and stuck.attempts == 1

        await wait_until_ready(queue, parked.parked_run)
        if kill == "after":
            # crossgate worker takes it over.
            env = {
                **os.environ,
                "CG_TEST_TICKETS": str(tickets.path),
                "CG_TEST_WORKDIR": str(tmp_path),
                "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            }
            app = "tests.adapters.langgraph.driver:worker_resumer"
            worked = await run(crossgate_cli("--db", db, "worker", "--app", app, "--once"), env)
            assert worked.returncode == 0, worked.stderr[-2000:]
            assert worked.stdout.startswith("finished"), worked.stdout
        else:
            done = await driver.resume(parked.parked_run)
            assert isinstance(done, Finished)

        assert tickets.delete_runs("t3") == (1 if kill == "after" else 0), "the tool ran at most once"
        taken = queue.get_parked(parked.parked_run)
        assert taken.status is ParkedRunStatus.RESUMED and taken.attempts == 2
        [told] = driver.tool_results(f"run-{kind}")
        assert "was applied before, but no outcome was recorded" in told
        with pytest.raises(ParkedRunClaimedError):
            await driver.resume(parked.parked_run)
        assert queue.verify_audit().ok
    finally:
        queue.close()


@pytest.mark.parametrize("kind", ["langgraph", "langchain"])
async def test_a_live_lease_is_not_taken_over(tmp_path: Path, kind: str) -> None:
    db = f"sqlite:///{tmp_path / 'crossgate.db'}"
    queue = ReviewQueue(open_store(db), POLICY)
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    driver = DRIVERS[kind](queue, tickets, tmp_path, db)
    try:
        parked = await driver.start(["t3"], run="run-live")
        assert isinstance(parked, Parked)
        queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
        queue.claim_parked(parked.parked_run, owner="someone-else", lease_seconds=300)
        with pytest.raises(ParkedRunClaimedError, match="someone-else"):
            await driver.resume(parked.parked_run)
        assert tickets.delete_runs() == 0
        assert parked.parked_run not in [p.id for p in queue.ready_runs()]
    finally:
        queue.close()

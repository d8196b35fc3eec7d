"""Park, decide and resume in separate processes: the driver's CLI, the real ``crossgate`` CLI, a SIGKILL, and
two resumers racing.

Every process opens the same SQLite store and ticket file by path; nothing passes between them but those.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("strands")

from crossgate import Approve, ParkedRunClaimedError, ParkedRunStatus, RequestStatus, ReviewQueue
from crossgate.runs import Finished
from tests.adapters.strands.conftest import REJECTION
from tests.adapters.strands.driver import StrandsTicketDriver
from tests.conformance.tickets import TicketStore

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


async def run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=ROOT
    )


def crossgate_cli(db: str, *args: str) -> list[str]:
    exe = shutil.which("crossgate", path=str(Path(sys.executable).parent))
    assert exe is not None, "the crossgate CLI is not installed in this environment"
    return [exe, "--db", db, *args]


def outcome(completed: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def test_seed_scenario_park_decide_and_resume_in_three_processes(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    driver = StrandsTicketDriver(queue, tickets, tmp_path, db_url)
    tmp_path.joinpath("strands-policy.json").write_text(queue.policy.model_dump_json(), encoding="utf-8")
    first = outcome(await run([*driver.command("start"), "--run", "run-seed", "t3", "t1"]))
    [t3] = first["request_ids"]  # type: ignore[misc]
    assert queue.get(t3).call.args == {"id": "t3"}
    assert tickets.ids() == ["t1", "t2", "t3"], "both tickets are there while the run is parked"

    approved = await run(crossgate_cli(db_url, "approve", t3, "--reviewer", "ann"))
    assert approved.returncode == 0, approved.stderr
    second = outcome(await run(driver.resume_command(str(first["parked_run"]))))
    [t1] = second["request_ids"]  # type: ignore[misc]
    assert queue.get(t1).call.args == {"id": "t1"}
    assert tickets.ids() == ["t1", "t2"]

    rejected = await run(crossgate_cli(db_url, "reject", t1, "--message", REJECTION, "--reviewer", "ann"))
    assert rejected.returncode == 0, rejected.stderr
    done = outcome(await run(driver.resume_command(str(second["parked_run"]))))
    assert done == {"finished": "run-seed"}
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t1") == 0
    assert tickets.delete_runs("t3") == 1
    assert driver.tool_results("run-seed") == ["deleted ticket t3", REJECTION], "the model reads the text verbatim"
    assert queue.get(t1).status is RequestStatus.REJECTED
    assert queue.verify_audit().ok


@pytest.mark.parametrize("kill", ["before", "after"])
async def test_a_resumer_killed_inside_the_tool_is_taken_over_after_its_lease(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str, kill: str
) -> None:
    driver = StrandsTicketDriver(queue, tickets, tmp_path, db_url)
    parked = await driver.start(["t3"], run="run-kill")
    [request_id] = parked.request_ids  # type: ignore[union-attr]
    queue.decide(request_id, Approve(), reviewer="ann")

    env = {**os.environ, "CG_TEST_KILL_IN_TOOL": kill}
    doomed = await run([*driver.command("resume"), "--lease", "1.0", parked.parked_run], env)  # type: ignore[union-attr]
    assert doomed.returncode == -9, doomed.stderr[-2000:]
    assert tickets.delete_runs("t3") == (1 if kill == "after" else 0)
    stuck = queue.get_parked(parked.parked_run)  # type: ignore[union-attr]
    assert stuck.status is ParkedRunStatus.RESUMING and stuck.attempts == 1

    for _ in range(200):  # bounded: until the dead resumer's lease ran out and the run is offered again
        if stuck.id in [p.id for p in queue.ready_runs()]:
            break
        await asyncio.sleep(0.05)
    done = await driver.resume(stuck.id)
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == (1 if kill == "after" else 0), "the tool ran at most once"
    taken = queue.get_parked(stuck.id)
    assert taken.status is ParkedRunStatus.RESUMED and taken.attempts == 2
    [told] = driver.tool_results("run-kill")
    assert "was applied before, but no outcome was recorded" in told
    with pytest.raises(ParkedRunClaimedError):
        await driver.resume(stuck.id)


async def test_resuming_twice_and_two_concurrent_resumes_run_the_tool_once(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
) -> None:
    driver = StrandsTicketDriver(queue, tickets, tmp_path, db_url)
    tmp_path.joinpath("strands-policy.json").write_text(queue.policy.model_dump_json(), encoding="utf-8")
    first = outcome(await run([*driver.command("start"), "--run", "run-twice", "t3"]))
    [t3] = first["request_ids"]  # type: ignore[misc]
    queue.decide(t3, Approve(), reviewer="ann")
    both = await asyncio.gather(*(run(driver.resume_command(str(first["parked_run"]))) for _ in range(2)))
    assert sorted(c.returncode for c in both) == [0, 1], [c.stderr[-500:] for c in both]
    [loser] = [c for c in both if c.returncode != 0]
    assert "ParkedRunClaimedError" in loser.stderr
    again = await run(driver.resume_command(str(first["parked_run"])))
    assert again.returncode != 0 and "ParkedRunClaimedError" in again.stderr
    assert tickets.delete_runs("t3") == 1
    assert driver.tool_results("run-twice") == ["deleted ticket t3"]

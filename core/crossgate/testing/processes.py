"""``ProcessContract``: park in one process, decide in another, resume in a third; a resumer killed; two racing.

Subclass it with your ``ProcessTicketDriver`` (a ``GateTicketDriver`` is one)::

    class TestMyAdapterProcesses(ProcessContract):
        driver_class = MyTicketDriver

Every process opens the same SQLite store and ticket file by path; nothing passes between them but those.
Reviewers decide with the real ``crossgate`` command line, which must be installed beside ``sys.executable``.
Every scenario starts other processes, so each is marked ``slow``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from crossgate import Approve, ParkedRunClaimedError, ParkedRunStatus, RequestStatus, ReviewQueue
from crossgate.runs import Finished
from crossgate.testing.gate_driver import KILL_ENV, ProcessTicketDriver
from crossgate.testing.gate_world import REJECTION, GateWorld
from crossgate.testing.tickets import TicketStore

Completed = subprocess.CompletedProcess[str]


async def run_process(argv: list[str], env: dict[str, str] | None = None) -> Completed:
    """Run ``argv`` to its end (two minutes at most) off the event loop, capturing its output."""
    return await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=120, env=env)


def crossgate_cli(db_url: str, *args: str) -> list[str]:
    """argv of the real ``crossgate`` command line on the store ``db_url``."""
    exe = shutil.which("crossgate", path=str(Path(sys.executable).parent))
    assert exe is not None, "the crossgate CLI is not installed in this environment"
    return [exe, "--db", db_url, *args]


def printed_outcome(completed: Completed) -> dict[str, object]:
    """The JSON outcome a driver's process printed last; it must have exited 0."""
    assert completed.returncode == 0, completed.stderr[-2000:]
    outcome: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return outcome


def request_ids(outcome: dict[str, object]) -> list[str]:
    """The request ids of a parked outcome a driver's process printed."""
    ids = outcome["request_ids"]
    assert isinstance(ids, list), outcome
    return [str(i) for i in ids]


class ProcessContract(GateWorld):
    """The multi-process scenarios on the subclass's ``driver_class`` (a ``ProcessTicketDriver``)."""

    driver_class: ClassVar[type[ProcessTicketDriver]]

    def make_driver(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> ProcessTicketDriver:
        return self.driver_class(queue, tickets, workdir, db_url)

    @pytest.mark.slow
    @pytest.mark.asyncio
    async def test_seed_scenario_park_decide_and_resume_in_three_processes(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        first = printed_outcome(await run_process(driver.start_command(["t3", "t1"], run="run-seed")))
        [t3] = request_ids(first)
        assert queue.get(t3).call.args == {"id": "t3"}
        assert tickets.ids() == ["t1", "t2", "t3"], "both tickets are there while the run is parked"

        approved = await run_process(crossgate_cli(db_url, "approve", t3, "--reviewer", "ann"))
        assert approved.returncode == 0, approved.stderr
        second = printed_outcome(await run_process(driver.resume_command(str(first["parked_run"]))))
        [t1] = request_ids(second)
        assert queue.get(t1).call.args == {"id": "t1"}
        assert tickets.ids() == ["t1", "t2"]

        rejected = await run_process(crossgate_cli(db_url, "reject", t1, "--message", REJECTION, "--reviewer", "ann"))
        assert rejected.returncode == 0, rejected.stderr
        done = printed_outcome(await run_process(driver.resume_command(str(second["parked_run"]))))
        assert done == {"finished": "run-seed"}
        assert tickets.ids() == ["t1", "t2"]
        assert tickets.delete_runs("t1") == 0
        assert tickets.delete_runs("t3") == 1
        assert driver.tool_results("run-seed") == ["deleted ticket t3", REJECTION], "the model reads the text verbatim"
        assert queue.get(t1).status is RequestStatus.REJECTED
        assert queue.verify_audit().ok

    @pytest.mark.slow
    @pytest.mark.asyncio
    @pytest.mark.parametrize("kill", ["before", "after"])
    async def test_a_resumer_killed_inside_the_tool_is_taken_over_after_its_lease(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str, kill: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        parked = await driver.start(["t3"], run="run-kill")
        [request_id] = parked.request_ids  # type: ignore[union-attr]
        queue.decide(request_id, Approve(), reviewer="ann")

        env = {**os.environ, KILL_ENV: kill}
        doomed = await run_process(driver.resume_command(parked.parked_run, lease=1.0), env)  # type: ignore[union-attr]
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

    @pytest.mark.slow
    @pytest.mark.asyncio
    async def test_resuming_twice_and_two_concurrent_resumes_run_the_tool_once(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        first = printed_outcome(await run_process(driver.start_command(["t3"], run="run-twice")))
        [t3] = request_ids(first)
        queue.decide(t3, Approve(), reviewer="ann")
        resume = driver.resume_command(str(first["parked_run"]))
        both = await asyncio.gather(*(run_process(resume) for _ in range(2)))
        assert sorted(c.returncode for c in both) == [0, 1], [c.stderr[-500:] for c in both]
        [loser] = [c for c in both if c.returncode != 0]
        assert "ParkedRunClaimedError" in loser.stderr
        again = await run_process(resume)
        assert again.returncode != 0 and "ParkedRunClaimedError" in again.stderr
        assert tickets.delete_runs("t3") == 1
        assert driver.tool_results("run-twice") == ["deleted ticket t3"]

"""Defer, decide and resume in separate processes, and a crash while a request is pending.

Each step runs in a fresh Python process (``driver.main``) with its own CLI and scripted API; the
SQLite store, the ticket file, the CLI's config folder and the recorded Messages API bodies under one
folder are all they share.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crossgate import (
    Approve,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
    open_store,
)
from crossgate.runs import Finished
from tests.adapters.claude.driver import ROOT, ClaudeTicketDriver
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

POLICY = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))
STEP = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.claude.driver import main; main()"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ReviewQueue, TicketStore, str]:
    db_url = str(tmp_path / "crossgate.db")
    queue = ReviewQueue(open_store(db_url), POLICY)
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    ClaudeTicketDriver(queue, tickets, tmp_path, db_url)  # writes the policy the other processes load
    return queue, tickets, db_url


def step(tmp_path: Path, db_url: str, *args: str) -> dict[str, object]:
    completed = subprocess.run(
        [sys.executable, "-c", STEP, args[0], str(tmp_path), db_url, *args[1:]],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def crossgate(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("crossgate")), "--db", db_url, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_defer_decide_resume_in_three_processes(setup: tuple[ReviewQueue, TicketStore, str], tmp_path: Path) -> None:
    queue, tickets, db_url = setup
    parked = step(tmp_path, db_url, "run", "0", 'RUN three\nCALL delete_ticket {"id": "t3"}')
    requests = parked["requests"]
    assert isinstance(requests, list)
    [rid] = [str(r) for r in requests]
    assert tickets.ids() == ["t1", "t2", "t3"]

    wrong = crossgate(db_url, "approve", rid, "--fingerprint", "0" * 64, "--reviewer", "ann")
    assert wrong.returncode == 5, wrong.stdout + wrong.stderr  # a decision for another fingerprint
    assert queue.get(rid).status is RequestStatus.PENDING
    decided = crossgate(db_url, "edit", rid, "--args", '{"id": "t2"}', "--reviewer", "ann")
    assert decided.returncode == 0, decided.stdout + decided.stderr

    finished = step(tmp_path, db_url, "resume", str(parked["parked"]))
    assert finished == {"finished": parked["run"]}
    assert tickets.ids() == ["t1", "t3"]
    assert tickets.delete_runs() == 1
    assert queue.get(rid).status is RequestStatus.APPLIED
    driver = ClaudeTicketDriver(queue, tickets, tmp_path, db_url)
    assert driver.tool_results("three") == ["deleted ticket t2"]


async def test_a_crash_while_pending_loses_nothing(setup: tuple[ReviewQueue, TicketStore, str], tmp_path: Path) -> None:
    queue, tickets, db_url = setup
    # The first process parks, then waits for a decision without limit, and is killed while it waits.
    prompt = 'RUN crash\nCALL delete_ticket {"id": "t3"}'
    waiting = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STEP,
        "run",
        str(tmp_path),
        db_url,
        "none",
        prompt,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not queue.parked_runs() and time.monotonic() < deadline:
            assert waiting.returncode is None, "the first process exited before parking"
            await asyncio.sleep(0.1)
        [parked] = queue.parked_runs()
        await asyncio.sleep(1.0)  # it is waiting now; the CLI it started has exited with the deferral
        assert waiting.returncode is None
    finally:
        os.killpg(waiting.pid, signal.SIGKILL)
        await waiting.communicate()
    assert await waiting.wait() == -signal.SIGKILL
    [rid] = parked.request_ids
    assert queue.get(rid).status is RequestStatus.PENDING
    assert tickets.ids() == ["t1", "t2", "t3"]

    queue.decide(rid, Approve(), reviewer="ann")
    driver = ClaudeTicketDriver(queue, tickets, tmp_path, db_url)
    done = await driver.resume(parked.id)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    assert queue.get_parked(parked.id).status is ParkedRunStatus.RESUMED
    assert driver.tool_results("crash") == ["deleted ticket t3"]


async def test_a_dead_resumers_claim_is_taken_over_after_its_lease(
    setup: tuple[ReviewQueue, TicketStore, str], tmp_path: Path
) -> None:
    """A resumer that claimed the run and died before its CLI got anywhere: the next one takes it over."""
    queue, tickets, db_url = setup
    parked = step(tmp_path, db_url, "run", "0", 'RUN claimed\nCALL delete_ticket {"id": "t3"}')
    parked_run = str(parked["parked"])
    [rid] = queue.get_parked(parked_run).request_ids
    queue.decide(rid, Approve(), reviewer="ann")
    dead = queue.claim_parked(parked_run, owner="dead-resumer", lease_seconds=1.0)  # and never finishes
    assert dead.status is ParkedRunStatus.RESUMING and dead.attempts == 1

    driver = ClaudeTicketDriver(queue, tickets, tmp_path, db_url)
    with pytest.raises(ParkedRunClaimedError):  # a live lease: nobody else may take it yet
        await driver.resume(parked_run)
    assert tickets.delete_runs() == 0
    for _ in range(200):  # bounded: until the dead resumer's lease ran out and the run is offered again
        if parked_run in [p.id for p in queue.ready_runs()]:
            break
        await asyncio.sleep(0.05)
    done = await driver.resume(parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    taken = queue.get_parked(parked_run)
    assert taken.status is ParkedRunStatus.RESUMED and taken.attempts == 2
    assert queue.get(rid).status is RequestStatus.APPLIED
    assert driver.tool_results("claimed") == ["deleted ticket t3"]
    with pytest.raises(ParkedRunClaimedError):
        await driver.resume(parked_run)
    assert queue.verify_audit().ok


@pytest.mark.parametrize("kill", ["before", "after"])
async def test_a_resumer_killed_inside_the_tool_is_taken_over_after_its_lease(
    setup: tuple[ReviewQueue, TicketStore, str], tmp_path: Path, kill: str
) -> None:
    queue, tickets, db_url = setup
    parked = step(tmp_path, db_url, "run", "0", 'RUN takeover\nCALL delete_ticket {"id": "t3"}')
    parked_run = str(parked["parked"])
    [rid] = queue.get_parked(parked_run).request_ids
    queue.decide(rid, Approve(), reviewer="ann")

    # The resumer holds a 1-second lease and SIGKILLs itself inside the delete tool, before or after it
    # deletes; its CLI is killed with it (its process group), as when the host or container dies.
    driver = ClaudeTicketDriver(queue, tickets, tmp_path, db_url, lease_seconds=1.0)
    command = driver.resume_command(parked_run)
    log = tmp_path / "doomed.err"
    with log.open("wb") as err:
        doomed = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "CG_TEST_KILL_IN_TOOL": kill},
            start_new_session=True,
        )
        try:
            await asyncio.wait_for(doomed.wait(), timeout=180)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(doomed.pid, signal.SIGKILL)  # the CLI it started, too
    stderr = log.read_bytes()
    assert doomed.returncode == -signal.SIGKILL, stderr.decode()[-2000:]
    assert tickets.delete_runs("t3") == (1 if kill == "after" else 0)
    stuck = queue.get_parked(parked_run)
    assert stuck.status is ParkedRunStatus.RESUMING and stuck.attempts == 1
    assert queue.get(rid).status is RequestStatus.APPLIED

    with pytest.raises(ParkedRunClaimedError):  # a live lease: nobody else may take it yet
        await ClaudeTicketDriver(queue, tickets, tmp_path, db_url).resume(parked_run)
    for _ in range(200):  # bounded: until the dead resumer's lease ran out and the run is offered again
        if parked_run in [p.id for p in queue.ready_runs()]:
            break
        await asyncio.sleep(0.05)
    done = await ClaudeTicketDriver(queue, tickets, tmp_path, db_url).resume(parked_run)
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == (1 if kill == "after" else 0), "the tool ran at most once"
    taken = queue.get_parked(parked_run)
    assert taken.status is ParkedRunStatus.RESUMED and taken.attempts == 2
    told = ClaudeTicketDriver(queue, tickets, tmp_path, db_url).tool_results("takeover")
    assert any("was applied before, but no outcome was recorded" in text for text in told), told
    with pytest.raises(ParkedRunClaimedError):
        await ClaudeTicketDriver(queue, tickets, tmp_path, db_url).resume(parked_run)
    assert queue.verify_audit().ok

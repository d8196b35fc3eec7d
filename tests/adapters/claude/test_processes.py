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
from datetime import UTC, datetime, timedelta
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
from crossgate_claude.testing import MessagesAPI
from tests.adapters.claude.driver import MESSAGES_API_ENV, ROOT, ClaudeTicketDriver
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

    if stuck.lease_until is not None and stuck.lease_until > datetime.now(UTC) + timedelta(seconds=0.2):
        # A live lease: nobody else may take it yet. (The 1 s lease can run out while a loaded machine
        # starts the CLI, before the tool is even reached; then there is no live lease left to test.)
        with pytest.raises(ParkedRunClaimedError):
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


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("kill", ["before", "after"])
async def test_a_resumer_killed_while_its_cli_lives_on_is_finished_by_the_takeover(
    setup: tuple[ReviewQueue, TicketStore, str], tmp_path: Path, kill: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the resumer dies (SIGKILL in the tool); its CLI child records a result for the call and ends the turn.

    The Messages API runs here, so it outlives the resumer as a hosted API would. The session then has
    nothing to re-ask: the takeover reads that from its transcript and finishes the run without a CLI,
    where it used to wait ``resume_timeout`` for a re-ask and fail.
    """
    queue, tickets, db_url = setup
    with MessagesAPI(record_path=tmp_path / "messages.jsonl") as api:
        monkeypatch.setenv(MESSAGES_API_ENV, api.base_url)  # every process of the scenario uses this API
        parked = step(tmp_path, db_url, "run", "0", 'RUN orphan\nCALL delete_ticket {"id": "t3"}')
        parked_run = str(parked["parked"])
        [rid] = queue.get_parked(parked_run).request_ids
        queue.decide(rid, Approve(), reviewer="ann")

        command = ClaudeTicketDriver(queue, tickets, tmp_path, db_url, lease_seconds=1.0).resume_command(parked_run)
        with (tmp_path / "doomed.err").open("wb") as err:
            doomed = await asyncio.create_subprocess_exec(
                *command,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "CG_TEST_KILL_IN_TOOL": kill},
                start_new_session=True,
            )
            assert await asyncio.wait_for(doomed.wait(), timeout=180) == -signal.SIGKILL
        try:
            for _ in range(600):  # bounded: the orphaned CLI ends its turn and exits on its own
                if not _alive(doomed.pid):
                    break
                await asyncio.sleep(0.1)
            assert not _alive(doomed.pid), "the orphaned CLI did not exit"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(doomed.pid, signal.SIGKILL)
        ran = 1 if kill == "after" else 0
        assert tickets.delete_runs("t3") == ran
        assert queue.get(rid).status is RequestStatus.APPLIED
        assert queue.get_parked(parked_run).status is ParkedRunStatus.RESUMING

        for _ in range(200):  # bounded: until the dead resumer's lease ran out and the run is offered again
            if parked_run in [p.id for p in queue.ready_runs()]:
                break
            await asyncio.sleep(0.05)
        began = time.monotonic()
        done = await ClaudeTicketDriver(queue, tickets, tmp_path, db_url).resume(parked_run)
        assert time.monotonic() - began < 30, "the takeover waited for a re-ask that cannot come"
    assert isinstance(done, Finished)
    assert done.run == parked["run"]
    assert done.result.num_turns == 0  # no CLI was started: nothing could run in the takeover
    assert done.result.result  # the text the orphaned CLI's turn ended with
    assert tickets.delete_runs("t3") == ran, "the tool ran at most once"
    taken = queue.get_parked(parked_run)
    assert taken.status is ParkedRunStatus.RESUMED and taken.attempts == 2
    assert [r.id for r in queue.applied_without_outcome(taken)] == [rid]  # what runs show lists
    with pytest.raises(ParkedRunClaimedError):
        await ClaudeTicketDriver(queue, tickets, tmp_path, db_url).resume(parked_run)
    assert queue.verify_audit().ok


"""Across processes: park in one, decide through the ``crossgate`` CLI in a second, resume in a third."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import ParkedRunStatus, RequestStatus, ReviewQueue, open_store
from tests.adapters.langgraph.procs import command
from tests.conformance.tickets import TicketStore

pytestmark = pytest.mark.slow


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("crossgate", path=str(Path(sys.executable).parent))
    assert exe is not None, "the crossgate CLI is not installed in this environment"
    return run([exe, "--db", str(db), *args])


@pytest.fixture
def files(tmp_path: Path, tickets: TicketStore) -> dict[str, str]:
    return {
        "db": str(tmp_path / "crossgate.db"),
        "checkpoints": str(tmp_path / "checkpoints.db"),
        "tickets": str(tickets.path),
    }


def park(files: dict[str, str], thread: str, ticket: str) -> dict[str, object]:
    parked = run(command("park", files["db"], files["checkpoints"], files["tickets"], thread, ticket))
    assert parked.returncode == 0, parked.stderr[-2000:]
    return json.loads(parked.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_park_decide_with_the_cli_and_resume_in_three_processes(files, tickets: TicketStore) -> None:
    parked = park(files, "thread-a", "t3")
    [request_id] = parked["request_ids"]  # type: ignore[misc]
    assert tickets.ids() == ["t1", "t2", "t3"]
    shown = cli(Path(files["db"]), "show", request_id)
    assert shown.returncode == 0, shown.stderr
    assert "delete_ticket" in shown.stdout
    decided = cli(Path(files["db"]), "approve", request_id, "--reviewer", "ann")
    assert decided.returncode == 0, decided.stderr
    resumed = run(command("resume", files["db"], files["checkpoints"], files["tickets"], str(parked["parked_run"])))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["finished"] is True
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    queue = ReviewQueue(open_store(files["db"]))
    try:
        assert queue.get(request_id).status is RequestStatus.APPLIED
        assert queue.verify_audit().ok
    finally:
        queue.close()


def test_a_cli_rejection_resumed_elsewhere_keeps_the_ticket(files, tickets: TicketStore) -> None:
    parked = park(files, "thread-r", "t1")
    [request_id] = parked["request_ids"]  # type: ignore[misc]
    decided = cli(Path(files["db"]), "reject", request_id, "--message", "t1 is a real ticket", "--reviewer", "ann")
    assert decided.returncode == 0, decided.stderr
    resumed = run(command("resume", files["db"], files["checkpoints"], files["tickets"], str(parked["parked_run"])))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["result"]["outcome"] == "rejected: t1 is a real ticket"
    assert tickets.ids() == ["t1", "t2", "t3"]


def test_two_processes_resuming_the_same_interrupt_run_the_tool_once(files, tickets: TicketStore) -> None:
    parked = park(files, "thread-c", "t3")
    [request_id] = parked["request_ids"]  # type: ignore[misc]
    assert cli(Path(files["db"]), "approve", request_id, "--reviewer", "ann").returncode == 0
    argv = command("resume", files["db"], files["checkpoints"], files["tickets"], str(parked["parked_run"]))
    racers = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in racers]  # type: ignore[union-attr]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 3], results
    loser = next(err for code, _, err in results if code == 3)
    assert "ParkedRunClaimedError" in loser
    assert tickets.delete_runs("t3") == 1
    queue = ReviewQueue(open_store(files["db"]))
    try:
        assert queue.get_parked(str(parked["parked_run"])).status is ParkedRunStatus.RESUMED
    finally:
        queue.close()

"""Eight OS processes race to decide, or to apply, the same request: exactly one wins."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from crossgate import Approve, ReviewQueue, ToolCall, open_store
from tests.cli.conftest import subprocess_env

pytestmark = pytest.mark.slow

RACERS = 8

# Each racer pays its start-up cost first, says it is ready, and waits for the barrier file, so the eight
# reach the database together. Deciders then run the `crossgate` entry point itself with their argv.
DECIDER = """
import sys, time
from pathlib import Path
import crossgate.cli
ready, barrier = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not barrier.exists():
    time.sleep(0.001)
sys.argv = ["crossgate", *sys.argv[3:]]
crossgate.cli.main()
"""

APPLIER = """
import sys, time
from pathlib import Path
from crossgate import ConflictError, ReviewQueue, open_store
ready, barrier, db, request_id, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
queue = ReviewQueue(open_store(db))
queue.get(request_id)
ready.touch()
while not barrier.exists():
    time.sleep(0.001)
try:
    queue.mark_applied(request_id, args={"id": "t3"}, actor=name)
except ConflictError as exc:
    print(exc, file=sys.stderr)
    sys.exit(4)
print("applied by", name)
"""


def race(tmp_path: Path, script: str, argvs: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    barrier = tmp_path / "go"
    readies = [tmp_path / f"ready-{i}" for i in range(len(argvs))]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(ready), str(barrier), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=tmp_path,
        )
        for ready, argv in zip(readies, argvs, strict=True)
    ]
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in readies):
        assert time.monotonic() < deadline, "racers did not start"
        assert all(c.poll() is None for c in children), [c.communicate() for c in children if c.poll() is not None]
        time.sleep(0.01)
    barrier.touch()
    results = []
    for child in children:
        out, err = child.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(child.args, child.returncode, out, err))
    return results


@pytest.fixture
def pending(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "race.db")
    queue = ReviewQueue(open_store(db))
    request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"})).request
    assert request is not None
    queue.close()
    return db, request.id


def test_eight_processes_deciding_one_request_one_wins(tmp_path: Path, pending: tuple[str, str]) -> None:
    db, rid = pending
    decisions = [
        ["approve", rid],
        ["approve", rid, "--remember", "forever"],
        ["approve", rid],
        ["edit", rid, "--args", '{"id": "t3", "soft": true}'],
        ["edit", rid, "--args", '{"id": "t4"}'],
        ["reject", rid, "--message", "no"],
        ["reject", rid, "--message", "not that one"],
        ["respond", rid, "--content", "done"],
    ]
    argvs = [["--db", db, *argv, "--reviewer", f"reviewer-{i}"] for i, argv in enumerate(decisions)]
    results = race(tmp_path, DECIDER, argvs)

    codes = [r.returncode for r in results]
    assert sorted(codes) == [0] + [4] * 7, [(r.returncode, r.stderr) for r in results]
    winner = codes.index(0)
    for loser in (r for r in results if r.returncode == 4):
        assert loser.stdout == ""
        assert loser.stderr.count("\n") == 1
        assert loser.stderr.startswith(f"crossgate: error: request {rid} ")

    queue = ReviewQueue(open_store(db))
    stored = queue.get(rid)
    assert stored.decision is not None
    assert stored.decision.reviewer == f"reviewer-{winner}"
    assert stored.decision.kind.value == decisions[winner][0]
    assert [e.kind for e in queue.events(request_id=rid)] == ["submitted", "decided"]
    assert len(queue.rules()) == (1 if winner == 1 else 0)
    assert queue.verify_audit().ok
    queue.close()


def test_eight_processes_applying_one_decision_one_wins(tmp_path: Path, pending: tuple[str, str]) -> None:
    db, rid = pending
    queue = ReviewQueue(open_store(db))
    queue.decide(rid, Approve(), reviewer="ann", channel="cli")
    results = race(tmp_path, APPLIER, [[db, rid, f"worker-{i}"] for i in range(RACERS)])

    codes = [r.returncode for r in results]
    assert sorted(codes) == [0] + [4] * 7, [(r.returncode, r.stderr) for r in results]
    winner = f"worker-{codes.index(0)}"
    assert results[codes.index(0)].stdout == f"applied by {winner}\n"
    assert all("already applied" in r.stderr for r in results if r.returncode == 4)

    applied = [e for e in queue.events(request_id=rid) if e.kind == "applied"]
    assert [e.actor for e in applied] == [winner]
    assert queue.get(rid).status.value == "applied"
    assert queue.verify_audit().ok
    queue.close()

"""Several processes on one PostgreSQL schema: racing reviewers and appliers, leased resumes, wake-ups."""

from __future__ import annotations

import multiprocessing
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from crossgate import ParkedRunClaimedError, ParkedRunStatus, RequestStatus, ReviewQueue, ToolCall
from crossgate.stores.postgres import PostgresStore
from tests.postgres import procs

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CTX = multiprocessing.get_context("spawn")
RACERS = 6


def _submit(queue: ReviewQueue, ticket: str = "t1", run: str = "run-1") -> str:
    request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run=run)).request
    assert request is not None
    return request.id


def _run_all(processes: list[Any], timeout: float = 60) -> None:
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout)
        assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"


def _drain(results: Any, n: int) -> list[tuple[str, str]]:
    return [results.get(timeout=30) for _ in range(n)]


def test_racing_reviewers_in_separate_processes_exactly_one_decision_wins(
    pg_store: PostgresStore, pg_queue: ReviewQueue
) -> None:
    request_id = _submit(pg_queue)
    barrier, results = CTX.Barrier(RACERS), CTX.Queue()
    racers = [
        CTX.Process(target=procs.decide_race, args=(pg_store.url, request_id, f"reviewer{i}", barrier, results))
        for i in range(RACERS)
    ]
    _run_all(racers)
    outcomes = dict(_drain(results, RACERS))
    winners = [who for who, outcome in outcomes.items() if outcome == "won"]
    assert len(winners) == 1, outcomes
    assert set(outcomes.values()) == {"won", "AlreadyDecidedError"}
    stored = pg_queue.get(request_id)
    assert stored.status is RequestStatus.DECIDED
    assert stored.decision is not None and stored.decision.reviewer == winners[0]
    assert [e.kind for e in pg_queue.events(request_id=request_id)] == ["submitted", "decided"]
    assert pg_queue.verify_audit().ok


def test_racing_appliers_in_separate_processes_apply_once(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    from crossgate import Approve

    request_id = _submit(pg_queue)
    pg_queue.decide(request_id, Approve(), reviewer="ann")
    barrier, results = CTX.Barrier(RACERS), CTX.Queue()
    racers = [
        CTX.Process(
            target=procs.apply_race, args=(pg_store.url, request_id, {"id": "t1"}, f"worker{i}", barrier, results)
        )
        for i in range(RACERS)
    ]
    _run_all(racers)
    outcomes = [outcome for _, outcome in _drain(results, RACERS)]
    assert sorted(outcomes) == ["AlreadyAppliedError"] * (RACERS - 1) + ["won"]
    assert pg_queue.get(request_id).status is RequestStatus.APPLIED
    assert [e.kind for e in pg_queue.events(request_id=request_id)].count("applied") == 1


def _park_approved(queue: ReviewQueue) -> str:
    from crossgate import Approve

    request_id = _submit(queue, run="run-park")
    queue.decide(request_id, Approve(), reviewer="ann")
    return queue.park(framework="langgraph", run="run-park", request_ids=[request_id], state="{}").id


@pytest.mark.parametrize("die_after", ["claim", "apply"])
def test_worker_killed_mid_resume_is_finished_once_by_another_after_its_lease(
    pg_store: PostgresStore, pg_queue: ReviewQueue, tmp_path: Path, die_after: str
) -> None:
    parked_id = _park_approved(pg_queue)
    tool_log = tmp_path / "tool.log"
    tool_log.touch()
    lease = 2.0
    ready = CTX.Event()
    doomed = CTX.Process(
        target=procs.resume, args=(pg_store.url, parked_id, "worker-a", lease, str(tool_log), die_after, ready)
    )
    doomed.start()
    assert ready.wait(30)
    claimed_at = time.monotonic()
    os.kill(doomed.pid or 0, signal.SIGKILL)
    doomed.join(10)
    assert doomed.exitcode == -signal.SIGKILL

    with pytest.raises(ParkedRunClaimedError, match="resuming by worker-a"):
        pg_queue.claim_parked(parked_id, owner="worker-b")
    assert time.monotonic() - claimed_at < lease, "the early claim must happen while the lease still runs"

    assert parked_id not in [p.id for p in pg_queue.ready_runs()]
    time.sleep(max(0.0, lease - (time.monotonic() - claimed_at)) + 0.2)
    assert [p.id for p in pg_queue.ready_runs()] == [parked_id]  # a worker polling ready runs takes it over
    finished = CTX.Event()
    second = CTX.Process(
        target=procs.resume, args=(pg_store.url, parked_id, "worker-b", 30, str(tool_log), "never", finished)
    )
    _run_all([second])

    runs = tool_log.read_text().splitlines()
    assert len(runs) == (1 if die_after == "claim" else 0), runs  # applied-then-killed: at most once, never twice
    if runs:
        assert runs[0].startswith("worker-b ran delete_ticket")
    parked = pg_queue.get_parked(parked_id)
    assert parked.status is ParkedRunStatus.RESUMED
    assert parked.lease_owner == "worker-b" and parked.attempts == 2
    assert parked.outcome == "finished by worker-b"
    expected = {
        "claim": ["run_claimed", "run_claimed", "applied", "run_resumed"],
        "apply": ["run_claimed", "applied", "run_claimed", "run_resumed"],
    }
    assert [e.kind for e in pg_queue.events() if e.kind in ("run_claimed", "applied", "run_resumed")] == expected[
        die_after
    ]


def test_a_waiter_in_another_process_wakes_within_milliseconds_of_a_decision(
    pg_store: PostgresStore, pg_queue: ReviewQueue
) -> None:
    from crossgate import Approve, Reject

    inbox, outbox = CTX.Queue(), CTX.Queue()
    waiter = CTX.Process(target=procs.wait_for_decisions, args=(pg_store.url, inbox, outbox))
    waiter.start()
    latencies: list[float] = []
    try:
        for i in range(6):
            request_id = _submit(pg_queue, ticket=f"t{i}")
            inbox.put(request_id)
            assert outbox.get(timeout=30)[0] == "waiting"
            time.sleep(0.1)  # let the waiter register before the decision lands
            decision = Approve() if i % 2 == 0 else Reject(message="not this one")
            started = time.perf_counter()
            pg_queue.decide(request_id, decision, reviewer="ann")
            status, woke = outbox.get(timeout=15)
            assert status == "decided"
            latencies.append(woke - started)
    finally:
        inbox.put(None)
        waiter.join(30)
    assert waiter.exitcode == 0
    # The watcher's poll interval is 0.5 s, so a median well under it shows NOTIFY, not the timeout, woke it.
    assert statistics.median(latencies) < 0.1, latencies
    assert max(latencies) < 0.45, latencies

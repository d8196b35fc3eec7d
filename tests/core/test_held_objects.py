"""Callers may pass the parked run or request they hold instead of its id: the same checks, one read fewer."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import (
    Approve,
    NotFoundError,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    ReviewQueue,
    ToolCall,
    VerdictKind,
    open_store,
)
from crossgate.model import ParkedRun


@pytest.fixture(params=["memory", "sqlite"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> ReviewQueue:
    policy = Policy(rules=(PolicyRule(name="ask", verdict=VerdictKind.ASK, tool="delete_ticket"),))
    url = "memory:" if request.param == "memory" else str(tmp_path / "q.db")
    return ReviewQueue(open_store(url), policy)


def _parked(queue: ReviewQueue) -> tuple[str, ParkedRun]:
    call = ToolCall(framework="test", tool="delete_ticket", args={"id": "t3"}, call_id="c1", run="run-1")
    submission = queue.submit(call)
    assert submission.request is not None
    parked = queue.park(framework="test", run="run-1", request_ids=[submission.request.id], state="{}")
    return submission.request.id, parked


def test_a_held_parked_run_is_claimed_and_finished_once_with_its_run_in_the_audit(queue: ReviewQueue) -> None:
    request_id, parked = _parked(queue)
    queue.decide(request_id, Approve(), reviewer="alice")
    claimed = queue.claim_parked(parked, owner="w1")
    assert claimed.status is ParkedRunStatus.RESUMING
    with pytest.raises(ParkedRunClaimedError):
        queue.claim_parked(parked, owner="w2")  # the held copy still says parked; the store decides
    with pytest.raises(ParkedRunClaimedError):
        queue.finish_parked(parked, owner="w2")
    finished = queue.finish_parked(parked, owner="w1", outcome="finished")
    assert finished.status is ParkedRunStatus.RESUMED
    with pytest.raises(ParkedRunClaimedError):
        queue.claim_parked(parked, owner="w1")
    kinds = {e.kind: e for e in queue.events()}
    assert kinds["run_claimed"].run == "run-1"
    assert kinds["run_resumed"].run == "run-1"
    assert queue.verify_audit().ok


def test_a_held_parked_run_the_store_does_not_have_is_not_found(queue: ReviewQueue) -> None:
    _, parked = _parked(queue)
    ghost = parked.model_copy(update={"id": "park_ghost"})
    before = queue.events()
    with pytest.raises(NotFoundError):
        queue.claim_parked(ghost, owner="w1")
    with pytest.raises(NotFoundError):
        queue.finish_parked(ghost, owner="w1")
    assert queue.events() == before


def test_an_outcome_for_a_held_request_records_its_id_and_run(queue: ReviewQueue) -> None:
    request_id, _ = _parked(queue)
    request = queue.get(request_id)
    queue.record_outcome(request, ran=False, result="rejected")
    event = queue.events()[-1]
    assert event.kind == "not_run"
    assert (event.request_id, event.run) == (request_id, "run-1")
    assert event.payload["ran"] is False

"""Claims skip a parked run another resumer is claiming right now instead of queueing behind it."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
import pytest

from crossgate import ParkedRunClaimedError, ParkedRunStatus, ReviewQueue, ToolCall
from crossgate.stores.postgres import PostgresStore

pytestmark = pytest.mark.postgres


def _parked(queue: ReviewQueue) -> str:
    request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"}, run="r1")).request
    assert request is not None
    return queue.park(framework="langgraph", run="r1", request_ids=[request.id], state="{}").id


def test_a_claim_in_flight_elsewhere_is_skipped_not_waited_for(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    parked_id = _parked(pg_queue)
    with psycopg.connect(pg_store._conninfo, options=f"-c search_path={pg_store.schema}") as other:
        other.execute("SELECT 1 FROM parked_runs WHERE id = %s FOR UPDATE", (parked_id,))  # a claim in progress
        outcome: list[BaseException | None] = []

        def claim() -> None:
            try:
                pg_queue.claim_parked(parked_id, owner="w2")
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        racer = threading.Thread(target=claim)
        racer.start()
        racer.join(2.0)
        answered = not racer.is_alive()
        other.rollback()  # that claimer gave up (and a blocked claim, if any, goes on)
        racer.join(10)
        assert answered, "a claim must skip a locked run at once, not wait for it"
        assert isinstance(outcome[0], ParkedRunClaimedError)
    claimed = pg_queue.claim_parked(parked_id, owner="w2")
    assert claimed.status is ParkedRunStatus.RESUMING and claimed.lease_owner == "w2" and claimed.attempts == 1


def test_a_lease_is_taken_over_only_once_it_ran_out(pg_queue: ReviewQueue) -> None:
    parked_id = _parked(pg_queue)
    now = pg_queue.now()
    pg_queue.claim_parked(parked_id, owner="w1", lease_seconds=0.5)
    with pytest.raises(ParkedRunClaimedError, match="resuming by w1"):
        pg_queue.claim_parked(parked_id, owner="w2")
    time.sleep(0.6)
    taken = pg_queue.claim_parked(parked_id, owner="w2", lease_seconds=30)
    assert taken.lease_owner == "w2" and taken.attempts == 2 and taken.lease_until is not None
    assert taken.lease_until > now + timedelta(seconds=29)
    with pytest.raises(ParkedRunClaimedError):
        pg_queue.finish_parked(parked_id, owner="w1")  # the old owner lost its lease
    done = pg_queue.finish_parked(parked_id, owner="w2", outcome="ok")
    assert done.status is ParkedRunStatus.RESUMED
    with pytest.raises(ParkedRunClaimedError, match="resumed"):
        pg_queue.claim_parked(parked_id, owner="w3")
    assert [e.actor for e in pg_queue.events() if e.kind in ("run_claimed", "run_resumed")] == ["w1", "w2", "w2"]

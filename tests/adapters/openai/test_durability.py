"""A gated OpenAI round trip on the default SQLite store: which of its commits wait for an fsync."""

from __future__ import annotations

from crossgate import Approve, ReviewQueue
from crossgate.runs import Finished
from crossgate.stores.sqlite import SqliteStore
from crossgate_openai import Gate
from tests.adapters.openai.test_failures import parked_t3
from tests.conformance.tickets import TicketStore
from tests.core.sqlite_levels import FULL, NORMAL, commit_levels


async def test_the_pause_the_decision_and_the_applied_mark_are_synced_and_the_rest_is_not(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    store = queue.store
    assert isinstance(store, SqliteStore) and store.durability == "full"
    levels = commit_levels(store)
    agent, parked = await parked_t3(queue, tickets)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await Gate(queue, sdk_agent=agent).resume(parked.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1
    assert levels() == {
        "submitted": {FULL},
        "run_parked": {FULL},
        "decided": {FULL},
        "run_claimed": {NORMAL},
        "applied": {FULL},
        "ran": {NORMAL},
        "run_resumed": {NORMAL},
    }

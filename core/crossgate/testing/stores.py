"""``StoreContract``: the ``Store`` protocol as the queue relies on it. Every store must pass it unchanged.

Subclass it in your store's tests and give ``make_store``::

    class TestMyStore(StoreContract):
        def make_store(self, tmp_path: Path) -> Store:
            return MyStore(tmp_path / "store.db")
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

import pytest

import crossgate._parked_runs
from crossgate import (
    AdapterError,
    ApprovalRequest,
    Approve,
    ConfigurationError,
    ConflictError,
    ParkedRun,
    ParkedRunStatus,
    Policy,
    RequestQuery,
    RequestStatus,
    ReviewQueue,
    StandingRule,
    Store,
    ToolCall,
    VerdictKind,
    lifecycle,
)
from crossgate.audit import GENESIS_HASH, verify_chain
from crossgate.model import NewEvent
from crossgate.stores.base import Change, PruneEvent
from crossgate.stores.cursors import DeliveryCursor, DeliveryCursors
from crossgate.testing.clock import FakeClock
from crossgate.testing.fixtures import QueueFactory
from crossgate.testing.signed_state import SignedStateScenarios

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class CursorStore(Store, DeliveryCursors, Protocol):
    """A store that keeps delivery cursors too, as the project's stores do; the cursor tests need one."""


def make_request(
    n: int,
    *,
    status: RequestStatus = RequestStatus.PENDING,
    expires_at: datetime | None = None,
    framework: str = "langgraph",
    tool: str = "delete_ticket",
    agent: str | None = "triage",
    run: str | None = "run-1",
) -> ApprovalRequest:
    call = ToolCall(framework=framework, tool=tool, args={"id": f"t{n}"}, agent=agent, run=run, call_id=f"c{n}")
    return ApprovalRequest(
        id=f"req-{n}",
        call=call,
        fingerprint=call.fingerprint,
        status=status,
        created_at=T0 + timedelta(seconds=n),
        expires_at=expires_at,
    )


def ev(kind: str, request_id: str | None = None, **payload: object) -> NewEvent:
    return NewEvent(kind=kind, at=T0, request_id=request_id, payload=dict(payload))


def make_parked(n: int = 1) -> ParkedRun:
    return ParkedRun(
        id=f"park-{n}",
        framework="openai-agents",
        run=f"run-{n}",
        request_ids=(f"req-{n}",),
        state='{"opaque": true}',
        created_at=T0,
        updated_at=T0,
    )


def make_rule(n: int) -> StandingRule:
    return StandingRule(id=f"rule-{n}", effect=VerdictKind.ALLOW, tool="read_*", created_at=T0)


LEASE = timedelta(seconds=30)


# the parked-run lifecycle, as the queue asks a store for it ---------------------------------------------
def claim_run(
    store: Store, parked_id: str, owner: str, now: datetime, lease_until: datetime, event: NewEvent
) -> ParkedRun | None:
    """``ReviewQueue.claim_parked``'s store call: the lifecycle's claim, applied by the store."""
    return store.change_parked_run(parked_id, lifecycle.claim(owner, now, lease_until), event)


def finish_run(
    store: Store,
    parked_id: str,
    owner: str,
    status: ParkedRunStatus,
    outcome: str | None,
    now: datetime,
    event: NewEvent,
) -> ParkedRun | None:
    """``ReviewQueue.finish_parked``'s store call."""
    return store.change_parked_run(parked_id, lifecycle.finish(owner, status, outcome, now), event)


def retry_run(store: Store, parked_id: str, now: datetime, event: NewEvent) -> ParkedRun | None:
    """``ReviewQueue.retry_parked``'s store call."""
    return store.change_parked_run(parked_id, lifecycle.retry(now), event)


def prune_runs(store: Store, ids: Sequence[str], statuses: Sequence[ParkedRunStatus], event: PruneEvent) -> list[str]:
    """``ReviewQueue.prune_parked_states``'s store call (ConfigurationError, from the lifecycle, for a bad status)."""
    return store.change_parked_runs(ids, lifecycle.prune(statuses), event)


# pruning parked states -------------------------------------------------------------------------------
def parked_in(store: Store, n: int, status: ParkedRunStatus) -> ParkedRun:
    """Park run ``n`` and take it to ``status`` (claimed by w1, then finished when resumed or failed)."""
    store.insert_parked_run(make_parked(n).model_copy(update={"state": f'{{"run": {n}}}'}), ev("run_parked"))
    if status is not ParkedRunStatus.PARKED:
        claim_run(store, f"park-{n}", "w1", T0, T0 + timedelta(minutes=5), ev("run_claimed"))
    if status in (ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED):
        finish_run(store, f"park-{n}", "w1", status, "done", T0, ev("run_resumed"))
    stored = store.get_parked_run(f"park-{n}")
    assert stored is not None and stored.status is status and stored.state == f'{{"run": {n}}}'
    return stored


def prune_event(pruned: list[str]) -> NewEvent:
    return ev("parked_states_pruned", parked_runs=list(pruned))


FINISHED = (ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED)


# ... and through the queue, on every store --------------------------------------------------------------
DAY = 86400.0


def finished_run(queue: ReviewQueue, n: int, status: ParkedRunStatus) -> ParkedRun:
    """A run parked with one request, approved, claimed and (unless still parked or resuming) finished."""
    submitted = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": f"t{n}"}, run=f"r{n}"))
    assert submitted.request is not None
    parked = queue.park(framework="langgraph", run=f"r{n}", request_ids=[submitted.request.id], state="x" * (100 * n))
    if status is ParkedRunStatus.PARKED:
        return parked
    queue.decide(submitted.request.id, Approve(), reviewer="ann")
    queue.claim_parked(parked.id, owner="w1")
    if status is ParkedRunStatus.RESUMING:
        return queue.get_parked(parked.id)
    return queue.finish_parked(parked.id, owner="w1", status=status, outcome="done")


class StoreContract(SignedStateScenarios):
    """Every store operation the queue relies on: compare-and-set updates, pages, leases, the audit chain, pruning,
    and the signed state (policy versions, checkpoints: ``crossgate.testing.signed_state``).

    Provide ``make_store(tmp_path)``: a new, empty store per call. There are no capability flags: the queue
    needs all of it, so every store passes every test (or marks a known gap ``xfail`` with a reason).
    """

    def test_insert_then_get_returns_the_same_request(self, store: Store) -> None:
        request = make_request(1)
        event = store.insert_request(request, ev("submitted", request.id))
        assert store.get_request("req-1") == request
        assert event.seq == 1
        assert event.prev_hash == GENESIS_HASH

    def test_get_unknown_request_is_none(self, store: Store) -> None:
        assert store.get_request("req-missing") is None

    def test_duplicate_request_id_is_a_conflict_and_keeps_the_first(self, store: Store) -> None:
        first = make_request(1)
        store.insert_request(first, ev("submitted", first.id))
        clash = make_request(1, tool="other_tool")
        with pytest.raises(ConflictError):
            store.insert_request(clash, ev("submitted", clash.id))
        assert store.get_request("req-1") == first
        assert store.audit_head()[0] == 1

    def test_update_is_compare_and_set_on_status(self, store: Store) -> None:
        request = make_request(1)
        store.insert_request(request, ev("submitted", request.id))
        decided = request.model_copy(update={"status": RequestStatus.DECIDED})
        assert store.update_request(decided, (RequestStatus.PENDING,), ev("decided", request.id)) is not None
        again = request.model_copy(update={"status": RequestStatus.CANCELLED})
        assert store.update_request(again, (RequestStatus.PENDING,), ev("cancelled", request.id)) is None
        assert store.get_request("req-1") == decided
        assert [e.kind for e in store.list_events()] == ["submitted", "decided"]

    def test_update_of_unknown_request_changes_nothing(self, store: Store) -> None:
        ghost = make_request(9, status=RequestStatus.DECIDED)
        assert store.update_request(ghost, (RequestStatus.PENDING,), ev("decided", ghost.id)) is None
        assert store.get_request(ghost.id) is None
        assert store.audit_head() == (0, GENESIS_HASH)

    def test_only_one_of_many_racing_updates_wins(self, store: Store) -> None:
        request = make_request(1)
        store.insert_request(request, ev("submitted", request.id))
        wins: list[int] = []
        barrier = threading.Barrier(8)

        def decide(i: int) -> None:
            barrier.wait()
            decided = request.model_copy(update={"status": RequestStatus.DECIDED, "closed_reason": f"thread {i}"})
            if store.update_request(decided, (RequestStatus.PENDING,), ev("decided", request.id, thread=i)):
                wins.append(i)

        threads = [threading.Thread(target=decide, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        stored = store.get_request("req-1")
        assert stored is not None and stored.closed_reason == f"thread {wins[0]}"
        assert [e.kind for e in store.list_events()].count("decided") == 1

    def test_list_pages_newest_first_with_cursor(self, store: Store) -> None:
        for n in range(1, 8):
            r = make_request(n)
            store.insert_request(r, ev("submitted", r.id))
        first = store.list_requests(RequestQuery(limit=3))
        assert [r.id for r in first.items] == ["req-7", "req-6", "req-5"]
        assert first.next_cursor is not None
        second = store.list_requests(RequestQuery(limit=3, cursor=first.next_cursor))
        assert [r.id for r in second.items] == ["req-4", "req-3", "req-2"]
        third = store.list_requests(RequestQuery(limit=3, cursor=second.next_cursor))
        assert [r.id for r in third.items] == ["req-1"]
        assert third.next_cursor is None

    def test_list_oldest_first_and_exact_page_end(self, store: Store) -> None:
        for n in range(1, 5):
            r = make_request(n)
            store.insert_request(r, ev("submitted", r.id))
        page = store.list_requests(RequestQuery(limit=2, newest_first=False))
        assert [r.id for r in page.items] == ["req-1", "req-2"]
        last = store.list_requests(RequestQuery(limit=2, newest_first=False, cursor=page.next_cursor))
        assert [r.id for r in last.items] == ["req-3", "req-4"]
        assert last.next_cursor is None

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            (RequestQuery(statuses=(RequestStatus.DECIDED,)), ["req-2"]),
            (RequestQuery(statuses=(RequestStatus.PENDING, RequestStatus.EXPIRED)), ["req-4", "req-3", "req-1"]),
            (RequestQuery(framework="openai-agents"), ["req-3"]),
            (RequestQuery(tool="write_file"), ["req-4"]),
            (RequestQuery(agent="other"), ["req-2"]),
            (RequestQuery(run="run-9"), ["req-1"]),
            (RequestQuery(framework="langgraph", statuses=(RequestStatus.PENDING,)), ["req-4", "req-1"]),
            (RequestQuery(framework="nobody"), []),
        ],
    )
    def test_list_filters_are_exact_matches(self, store: Store, query: RequestQuery, expected: list[str]) -> None:
        requests = [
            make_request(1, run="run-9"),
            make_request(2, status=RequestStatus.DECIDED, agent="other"),
            make_request(3, status=RequestStatus.EXPIRED, framework="openai-agents"),
            make_request(4, tool="write_file"),
        ]
        for r in requests:
            store.insert_request(r, ev("submitted", r.id))
        assert [r.id for r in store.list_requests(query).items] == expected

    def test_overdue_lists_only_pending_requests_past_expiry(self, store: Store) -> None:
        due = make_request(1, expires_at=T0)
        later = make_request(2, expires_at=T0 + timedelta(hours=1))
        never = make_request(3)
        closed = make_request(4, status=RequestStatus.DECIDED, expires_at=T0 - timedelta(hours=1))
        for r in (due, later, never, closed):
            store.insert_request(r, ev("submitted", r.id))
        assert [r.id for r in store.overdue_requests(T0)] == ["req-1"]
        assert [r.id for r in store.overdue_requests(T0 + timedelta(hours=2))] == ["req-1", "req-2"]

    def test_rules_insert_list_and_revoke_once(self, store: Store) -> None:
        store.insert_rule(make_rule(1), ev("rule_added"))
        store.insert_rule(make_rule(2), ev("rule_added"))
        revoked = make_rule(1).model_copy(update={"revoked_at": T0, "revoked_by": "ann"})
        assert store.revoke_rule(revoked, ev("rule_revoked")) is not None
        assert store.revoke_rule(revoked, ev("rule_revoked")) is None
        assert [r.id for r in store.list_rules()] == ["rule-2"]
        assert [r.id for r in store.list_rules(include_revoked=True)] == ["rule-1", "rule-2"]
        assert store.get_rule("rule-1") == revoked
        assert store.get_rule("rule-x") is None
        assert [e.kind for e in store.list_events()] == ["rule_added", "rule_added", "rule_revoked"]

    def test_parked_run_is_claimed_once_until_its_lease_runs_out(self, store: Store) -> None:
        store.insert_parked_run(make_parked(), ev("run_parked"))
        lease_end = T0 + timedelta(minutes=5)
        claimed = claim_run(store, "park-1", "w1", T0, lease_end, ev("run_claimed"))
        assert claimed is not None and claimed.status is ParkedRunStatus.RESUMING and claimed.lease_owner == "w1"
        assert claim_run(store, "park-1", "w2", T0 + timedelta(minutes=1), lease_end, ev("run_claimed")) is None
        stolen = claim_run(store, "park-1", "w2", lease_end, lease_end + timedelta(minutes=5), ev("run_claimed"))
        assert stolen is not None and stolen.lease_owner == "w2" and stolen.attempts == 2
        assert finish_run(store, "park-1", "w1", ParkedRunStatus.RESUMED, "late", T0, ev("run_resumed")) is None
        done = finish_run(store, "park-1", "w2", ParkedRunStatus.RESUMED, "ok", T0, ev("run_resumed"))
        assert done is not None and done.status is ParkedRunStatus.RESUMED and done.outcome == "ok"
        far_future = T0 + timedelta(days=1)
        assert claim_run(store, "park-1", "w3", far_future, far_future, ev("run_claimed")) is None
        assert store.get_parked_run("park-1") == done

    def test_only_a_failed_parked_run_can_be_retried_and_then_claimed_again(self, store: Store) -> None:
        store.insert_parked_run(make_parked(), ev("run_parked"))
        head = store.audit_head()
        assert retry_run(store, "park-1", T0, ev("run_retried")) is None  # parked: nothing to retry
        assert retry_run(store, "park-ghost", T0, ev("run_retried")) is None
        lease_end = T0 + timedelta(minutes=5)
        assert claim_run(store, "park-1", "w1", T0, lease_end, ev("run_claimed")) is not None
        assert retry_run(store, "park-1", T0, ev("run_retried")) is None  # resuming: not failed
        failed = finish_run(store, "park-1", "w1", ParkedRunStatus.FAILED, "TimeoutError", T0, ev("run_resumed"))
        assert failed is not None and failed.status is ParkedRunStatus.FAILED
        assert store.audit_head()[0] == head[0] + 2  # the refused retries appended nothing
        later = T0 + timedelta(minutes=1)
        retried = retry_run(store, "park-1", later, ev("run_retried"))
        assert retried is not None
        assert (retried.status, retried.lease_owner, retried.lease_until, retried.outcome) == (
            ParkedRunStatus.PARKED,
            None,
            None,
            None,
        )
        assert (retried.attempts, retried.updated_at, retried.state) == (1, later, failed.state)
        assert store.get_parked_run("park-1") == retried
        assert retry_run(store, "park-1", later, ev("run_retried")) is None  # parked again: once
        again = claim_run(store, "park-1", "w2", later, later + timedelta(minutes=5), ev("run_claimed"))
        assert again is not None and again.lease_owner == "w2" and again.attempts == 2
        assert [e.kind for e in store.list_events()][-2:] == ["run_retried", "run_claimed"]

    def test_a_parked_run_changes_only_as_the_change_allows_and_with_its_event(self, store: Store) -> None:
        store.insert_parked_run(make_parked(), ev("run_parked"))
        head = store.audit_head()
        seen: list[ParkedRun] = []

        def refuse(parked: ParkedRun) -> bool:
            seen.append(parked)
            return False

        renamed = Change(allowed=refuse, apply=lambda p: p.model_copy(update={"outcome": "never"}))
        assert store.change_parked_run("park-1", renamed, ev("refused")) is None
        assert seen == [make_parked()]  # the store asks about the stored run
        assert store.audit_head() == head and store.get_parked_run("park-1") == make_parked()
        assert store.change_parked_run("park-x", renamed, ev("refused")) is None
        noted = Change(allowed=lambda p: p.outcome is None, apply=lambda p: p.model_copy(update={"outcome": "noted"}))
        changed = store.change_parked_run("park-1", noted, ev("noted"))
        assert changed is not None and changed.outcome == "noted" and store.get_parked_run("park-1") == changed
        assert [e.kind for e in store.list_events()][-1] == "noted"
        assert store.change_parked_run("park-1", noted, ev("noted")) is None  # the stored run no longer allows it

    def test_several_parked_runs_change_in_one_event_naming_those_changed_in_order(self, store: Store) -> None:
        for n in (1, 2, 3):
            store.insert_parked_run(make_parked(n), ev("run_parked"))
        odd = Change(allowed=lambda p: p.id != "park-2", apply=lambda p: p.model_copy(update={"outcome": "odd"}))
        named: list[list[str]] = []

        def event(ids: list[str]) -> NewEvent:
            named.append(ids)
            return ev("changed", ids=list(ids))

        order = ["park-3", "park-2", "park-x", "park-1", "park-3"]
        assert store.change_parked_runs(order, odd, event) == ["park-3", "park-1"]
        assert named == [["park-3", "park-1"]]
        assert [p.outcome for p in store.list_parked_runs()] == ["odd", None, "odd"]
        head = store.audit_head()
        assert store.change_parked_runs(["park-2"], odd, event) == []
        assert store.audit_head() == head and named == [["park-3", "park-1"]]

    def test_unknown_parked_run_cannot_be_claimed(self, store: Store) -> None:
        assert claim_run(store, "park-x", "w1", T0, T0, ev("run_claimed")) is None
        assert store.get_parked_run("park-x") is None
        assert store.audit_head()[0] == 0

    def test_parked_runs_filter_by_status_framework_and_run(self, store: Store) -> None:
        store.insert_parked_run(make_parked(1), ev("run_parked"))
        store.insert_parked_run(make_parked(2), ev("run_parked"))
        claim_run(store, "park-2", "w", T0, T0 + timedelta(minutes=1), ev("run_claimed"))
        assert [p.id for p in store.list_parked_runs(statuses=(ParkedRunStatus.PARKED,))] == ["park-1"]
        assert [p.id for p in store.list_parked_runs(run="run-2")] == ["park-2"]
        assert store.list_parked_runs(framework="langgraph") == []
        assert store.get_parked_run("park-1") == make_parked(1)

    def test_events_form_a_verifiable_chain_and_filter_by_request(self, store: Store) -> None:
        store.append_event(ev("a", "req-1", n=1))
        store.append_event(ev("b", "req-2", text="héllo ✓", number=1.5))
        store.append_event(ev("c", "req-1", nested={"z": [1, 2], "a": None}))
        events = store.list_events()
        assert [e.seq for e in events] == [1, 2, 3]
        assert events[1].prev_hash == events[0].hash
        assert events[1].payload == {"text": "héllo ✓", "number": 1.5}
        assert verify_chain(events, head=store.audit_head()).ok
        assert [e.kind for e in store.list_events(request_id="req-1")] == ["a", "c"]
        assert [e.kind for e in store.list_events(after=1, limit=1)] == ["b"]
        assert store.audit_head() == (3, events[-1].hash)

    def test_wait_for_change_returns_at_once_when_behind_and_times_out_when_current(self, store: Store) -> None:
        store.append_event(ev("a"))
        assert store.wait_for_change(0, timeout=5) == 1
        started = time.monotonic()
        assert store.wait_for_change(1, timeout=0.1) == 1
        assert time.monotonic() - started >= 0.09

    def test_wait_for_change_wakes_on_another_threads_append(self, store: Store) -> None:
        timer = threading.Timer(0.05, lambda: store.append_event(ev("late")))
        timer.start()
        started = time.monotonic()
        assert store.wait_for_change(0, timeout=5) == 1
        assert time.monotonic() - started < 2
        timer.join()

    def test_delivery_cursor_is_created_at_the_start_seq_and_keeps_its_seq_on_a_later_claim(
        self, store: CursorStore
    ) -> None:
        assert store.get_delivery_cursor("hook-a") is None
        claimed = store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=7)
        assert claimed == DeliveryCursor("hook-a", 7, "s1", T0 + LEASE)
        assert store.get_delivery_cursor("hook-a") == claimed
        # the start seq only matters for a new cursor; the holder's renewal keeps the stored seq
        again = store.claim_delivery_cursor("hook-a", "s1", T0 + timedelta(seconds=5), T0 + 2 * LEASE, start=99)
        assert again == DeliveryCursor("hook-a", 7, "s1", T0 + 2 * LEASE)
        assert store.get_delivery_cursor("hook-b") is None
        assert store.audit_head()[0] == 0, "cursors are bookkeeping: they append no event"

    def test_delivery_cursor_claim_is_refused_while_another_owner_holds_a_live_lease(self, store: CursorStore) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=3)
        assert store.claim_delivery_cursor("hook-a", "s2", T0 + LEASE - timedelta(seconds=1), T0 + 2 * LEASE, 0) is None
        assert store.get_delivery_cursor("hook-a") == DeliveryCursor("hook-a", 3, "s1", T0 + LEASE)

    def test_delivery_cursor_is_taken_over_once_its_lease_ran_out(self, store: CursorStore) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=3)
        assert store.advance_delivery_cursor("hook-a", "s1", 5, T0 + LEASE) is not None
        taken = store.claim_delivery_cursor("hook-a", "s2", T0 + LEASE, T0 + 2 * LEASE, start=0)
        assert taken == DeliveryCursor("hook-a", 5, "s2", T0 + 2 * LEASE), "the new holder resumes from the stored seq"

    def test_only_the_lease_holder_advances_a_delivery_cursor(self, store: CursorStore) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=2)
        advanced = store.advance_delivery_cursor("hook-a", "s1", 4, T0 + 2 * LEASE)
        assert advanced == DeliveryCursor("hook-a", 4, "s1", T0 + 2 * LEASE)
        store.claim_delivery_cursor("hook-a", "s2", T0 + 3 * LEASE, T0 + 4 * LEASE, start=0)
        # s1's lease ran out and s2 took over: the stale holder's advance is refused and changes nothing
        assert store.advance_delivery_cursor("hook-a", "s1", 9, T0 + 9 * LEASE) is None
        assert store.advance_delivery_cursor("hook-b", "s1", 1, T0 + LEASE) is None
        assert store.get_delivery_cursor("hook-a") == DeliveryCursor("hook-a", 4, "s2", T0 + 4 * LEASE)
        assert store.get_delivery_cursor("hook-b") is None

    def test_a_delivery_cursor_never_moves_backwards(self, store: CursorStore) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=0)
        store.advance_delivery_cursor("hook-a", "s1", 6, T0 + LEASE)
        assert store.advance_delivery_cursor("hook-a", "s1", 5, T0 + 2 * LEASE) is None
        assert store.get_delivery_cursor("hook-a") == DeliveryCursor("hook-a", 6, "s1", T0 + LEASE)
        renewed = store.advance_delivery_cursor("hook-a", "s1", 6, T0 + 2 * LEASE)
        assert renewed == DeliveryCursor("hook-a", 6, "s1", T0 + 2 * LEASE), "the same seq only renews the lease"

    def test_a_released_delivery_cursor_keeps_its_seq_and_is_free_to_claim(self, store: CursorStore) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=0)
        store.advance_delivery_cursor("hook-a", "s1", 8, T0 + LEASE)
        assert store.release_delivery_cursor("hook-a", "s2") is None, "only the holder releases"
        assert store.release_delivery_cursor("hook-a", "s1") == DeliveryCursor("hook-a", 8)
        assert store.release_delivery_cursor("hook-a", "s1") is None
        assert store.advance_delivery_cursor("hook-a", "s1", 9, T0 + LEASE) is None, "released means no longer held"
        assert store.get_delivery_cursor("hook-a") == DeliveryCursor("hook-a", 8)
        # free at once, long before the old lease would have run out
        assert store.claim_delivery_cursor("hook-a", "s2", T0, T0 + LEASE, start=0) == DeliveryCursor(
            "hook-a", 8, "s2", T0 + LEASE
        )

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            (lambda s: s.claim_delivery_cursor("", "s1", T0, T0 + LEASE, start=0), "needs a name"),
            (lambda s: s.claim_delivery_cursor("hook-a", "", T0, T0 + LEASE, start=0), "owner cannot be empty"),
            (lambda s: s.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=-1), "cannot be negative"),
            (lambda s: s.advance_delivery_cursor("hook-a", "s1", -1, T0 + LEASE), "cannot be negative"),
            (lambda s: s.release_delivery_cursor("hook-a", ""), "owner cannot be empty"),
        ],
    )
    def test_bad_delivery_cursor_arguments_are_refused_and_store_nothing(
        self, store: CursorStore, call: Callable[[Store], object], message: str
    ) -> None:
        store.claim_delivery_cursor("hook-a", "s1", T0, T0 + LEASE, start=4)
        with pytest.raises(ConfigurationError, match=message):
            call(store)
        assert store.get_delivery_cursor("hook-a") == DeliveryCursor("hook-a", 4, "s1", T0 + LEASE)
        assert store.get_delivery_cursor("") is None

    def test_only_one_of_many_racing_delivery_cursor_claims_wins(self, store: CursorStore) -> None:
        barrier = threading.Barrier(8)
        winners: list[str] = []

        def claim(i: int) -> None:
            barrier.wait()
            if store.claim_delivery_cursor("hook-a", f"s{i}", T0, T0 + LEASE, start=i) is not None:
                winners.append(f"s{i}")

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(winners) == 1
        cursor = store.get_delivery_cursor("hook-a")
        assert cursor is not None and cursor.lease_owner == winners[0] and cursor.seq == int(winners[0][1:])

    def test_prune_clears_the_state_of_listed_runs_in_the_given_statuses_only(self, store: Store) -> None:
        statuses = [
            ParkedRunStatus.RESUMED,
            ParkedRunStatus.FAILED,
            ParkedRunStatus.PARKED,
            ParkedRunStatus.RESUMING,
            ParkedRunStatus.RESUMED,
        ]
        before = {p.id: p for p in (parked_in(store, n, s) for n, s in enumerate(statuses, start=1))}
        head = store.audit_head()
        every = ["park-4", "park-3", "park-2", "park-1", "park-ghost", "park-1"]  # park-5 is not listed
        assert prune_runs(store, every, (ParkedRunStatus.RESUMED,), prune_event) == ["park-1"]
        after = {p.id: p for p in store.list_parked_runs()}
        assert after["park-1"] == before["park-1"].model_copy(update={"state": ""}), "only the state changes"
        assert {i: after[i] for i in ("park-2", "park-3", "park-4", "park-5")} == {
            i: before[i] for i in ("park-2", "park-3", "park-4", "park-5")
        }
        events = store.list_events(after=head[0])
        assert [(e.kind, e.payload) for e in events] == [("parked_states_pruned", {"parked_runs": ["park-1"]})]
        assert events[0].prev_hash == head[1] and store.audit_head() == (head[0] + 1, events[0].hash)
        assert verify_chain(store.list_events(), head=store.audit_head()).ok
        # the ids come back in the order given; a state pruned already is not pruned (nor recorded) again
        assert prune_runs(store, ["park-5", "park-2", "park-1"], FINISHED, prune_event) == ["park-5", "park-2"]
        assert [p.state for p in store.list_parked_runs()] == ["", "", '{"run": 3}', '{"run": 4}', ""]
        assert store.list_events()[-1].payload == {"parked_runs": ["park-5", "park-2"]}
        assert store.audit_head()[0] == head[0] + 2
        assert verify_chain(store.list_events(), head=store.audit_head()).ok

    def test_prune_with_nothing_to_prune_changes_and_records_nothing(self, store: Store) -> None:
        parked_in(store, 1, ParkedRunStatus.RESUMED)
        parked_in(store, 2, ParkedRunStatus.PARKED)
        head, before = store.audit_head(), store.list_parked_runs()
        called: list[list[str]] = []

        def record(pruned: list[str]) -> NewEvent:
            called.append(pruned)
            return prune_event(pruned)

        assert prune_runs(store, [], FINISHED, record) == []
        assert prune_runs(store, ["park-2", "park-ghost"], FINISHED, record) == []
        assert prune_runs(store, ["park-1"], (ParkedRunStatus.FAILED,), record) == []
        assert called == [] and store.audit_head() == head and store.list_parked_runs() == before

    @pytest.mark.parametrize("status", [ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING])
    def test_prune_refuses_statuses_whose_runs_may_still_be_resumed(
        self, store: Store, status: ParkedRunStatus
    ) -> None:
        parked_in(store, 1, status)
        parked_in(store, 2, ParkedRunStatus.RESUMED)
        head, before = store.audit_head(), store.list_parked_runs()
        with pytest.raises(ConfigurationError, match=f"the SDK state of {status.value} runs cannot be pruned"):
            prune_runs(store, ["park-1", "park-2"], (ParkedRunStatus.RESUMED, status), prune_event)
        assert store.audit_head() == head and store.list_parked_runs() == before

    def test_a_failed_run_retried_after_it_was_listed_keeps_its_state(self, store: Store) -> None:
        parked_in(store, 1, ParkedRunStatus.FAILED)
        parked_in(store, 2, ParkedRunStatus.FAILED)
        listed = [p.id for p in store.list_parked_runs(statuses=(ParkedRunStatus.FAILED,))]
        retried = retry_run(store, "park-1", T0, ev("run_retried"))  # between the listing and the prune
        assert retried is not None
        assert prune_runs(store, listed, FINISHED, prune_event) == ["park-2"]
        assert store.get_parked_run("park-1") == retried and retried.state == '{"run": 1}'
        assert store.list_events()[-1].payload == {"parked_runs": ["park-2"]}
        # the same stale listing once more, now that only the retried run is left: nothing at all
        head = store.audit_head()
        assert prune_runs(store, ["park-1"], FINISHED, prune_event) == []
        assert store.audit_head() == head and store.get_parked_run("park-1") == retried

    def test_a_failed_run_whose_state_was_pruned_cannot_be_retried(self, store: Store) -> None:
        parked_in(store, 1, ParkedRunStatus.FAILED)
        prune_runs(store, ["park-1"], FINISHED, prune_event)
        head, before = store.audit_head(), store.get_parked_run("park-1")
        assert before is not None and before.status is ParkedRunStatus.FAILED and before.state == ""
        assert retry_run(store, "park-1", T0 + timedelta(minutes=1), ev("run_retried")) is None
        assert store.audit_head() == head and store.get_parked_run("park-1") == before
        far = T0 + timedelta(days=1)
        assert claim_run(store, "park-1", "w2", far, far, ev("run_claimed")) is None

    def test_a_prune_racing_a_retry_never_leaves_a_parked_run_without_its_state(self, store: Store) -> None:
        runs = [parked_in(store, n, ParkedRunStatus.FAILED).id for n in range(1, 11)]
        results: dict[str, object] = {}
        barrier = threading.Barrier(2)

        def prune() -> None:
            barrier.wait()
            results["pruned"] = prune_runs(store, runs, FINISHED, prune_event)

        def retry() -> None:
            barrier.wait()
            results["retried"] = [r for r in runs if retry_run(store, r, T0, ev("run_retried")) is not None]

        threads = [threading.Thread(target=prune), threading.Thread(target=retry)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pruned, retried = results["pruned"], results["retried"]
        assert isinstance(pruned, list) and isinstance(retried, list)
        assert sorted(pruned + retried) == sorted(runs), "each run was either pruned or retried"
        for parked in store.list_parked_runs():
            if parked.id in retried:
                assert (parked.status, parked.state) == (ParkedRunStatus.PARKED, f'{{"run": {parked.id[5:]}}}')
            else:
                assert (parked.status, parked.state) == (ParkedRunStatus.FAILED, "")
        assert verify_chain(store.list_events(), head=store.audit_head()).ok

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock(T0)

    @pytest.fixture
    def pq(self, queue_with: QueueFactory, clock: FakeClock) -> ReviewQueue:
        return queue_with(Policy(), clock=clock)

    def test_queue_prunes_runs_resumed_before_the_cutoff_and_records_one_event(
        self, pq: ReviewQueue, clock: FakeClock
    ) -> None:
        old_resumed = finished_run(pq, 1, ParkedRunStatus.RESUMED)
        old_failed = finished_run(pq, 2, ParkedRunStatus.FAILED)
        clock.advance(DAY)
        recent = finished_run(pq, 3, ParkedRunStatus.RESUMED)
        parked, resuming = finished_run(pq, 4, ParkedRunStatus.PARKED), finished_run(pq, 5, ParkedRunStatus.RESUMING)
        clock.advance(7 * DAY - 1)  # runs 1 and 2 ended 8 days ago less a second, run 3 a second short of 7 days ago
        assert pq.prunable_parked_states(older_than=timedelta(days=7)) == [old_resumed]
        assert [p.id for p in pq.prunable_parked_states(older_than=timedelta(days=7), include_failed=True)] == [
            old_resumed.id,
            old_failed.id,
        ]
        head = pq.store.audit_head()
        assert pq.prune_parked_states(older_than=timedelta(days=7), actor="ops") == [old_resumed]
        assert pq.get_parked(old_resumed.id) == old_resumed.model_copy(update={"state": ""})
        assert pq.get_parked(old_failed.id) == old_failed, "failed runs only with include_failed"
        for kept in (recent, parked, resuming):
            assert pq.get_parked(kept.id).state == kept.state
        (event,) = pq.store.list_events(after=head[0])
        assert (event.kind, event.actor, event.run) == ("parked_states_pruned", "ops", None)
        assert event.payload == {
            "parked_runs": [old_resumed.id],
            "count": 1,
            "state_bytes": 100,
            "statuses": ["resumed"],
            "updated_before": (T0 + timedelta(seconds=DAY - 1)).isoformat(),
        }
        pruned = pq.prune_parked_states(older_than=timedelta(hours=1), include_failed=True)
        assert [p.id for p in pruned] == [old_failed.id, recent.id]
        assert [p.state for p in pruned] == ["x" * 200, "x" * 300], (
            "the runs as they were: their state is what was freed"
        )
        assert pq.get_parked(parked.id) == parked and pq.get_parked(resuming.id) == resuming
        assert pq.store.list_events()[-1].payload["state_bytes"] == 500
        head = pq.store.audit_head()
        assert pq.prune_parked_states(older_than=timedelta(minutes=1), include_failed=True) == []
        assert pq.store.audit_head() == head, "nothing pruned, nothing recorded"
        assert pq.verify_audit().ok

    def test_a_prune_event_lists_a_bounded_number_of_ids_and_counts_them_all(
        self, pq: ReviewQueue, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(crossgate._parked_runs, "PRUNED_IDS_LISTED", 2)
        runs = [finished_run(pq, n, ParkedRunStatus.RESUMED) for n in range(1, 6)]
        clock.advance(DAY)
        assert len(pq.prune_parked_states(older_than=timedelta(hours=1))) == 5
        payload = pq.events()[-1].payload
        assert (payload["parked_runs"], payload["count"]) == ([runs[0].id, runs[1].id], 5)
        assert payload["state_bytes"] == sum(len(r.state) for r in runs)

    def test_retry_of_a_failed_run_whose_state_was_pruned_is_refused_and_changes_nothing(
        self, pq: ReviewQueue, clock: FakeClock
    ) -> None:
        failed = finished_run(pq, 1, ParkedRunStatus.FAILED)
        clock.advance(DAY)
        pq.prune_parked_states(older_than=timedelta(hours=1), include_failed=True)
        head, before = pq.store.audit_head(), pq.get_parked(failed.id)
        with pytest.raises(ConflictError, match="its SDK state was pruned; it cannot be resumed again"):
            pq.retry_parked(failed.id, actor="ops")
        assert pq.store.audit_head() == head and pq.get_parked(failed.id) == before
        assert pq.ready_runs() == []

    def test_a_failed_run_that_was_not_pruned_is_still_retried(self, pq: ReviewQueue, clock: FakeClock) -> None:
        failed = finished_run(pq, 1, ParkedRunStatus.FAILED)
        clock.advance(DAY)
        assert pq.prune_parked_states(older_than=timedelta(hours=1)) == []  # failed runs need include_failed
        assert pq.retry_parked(failed.id).state == failed.state

    @pytest.mark.parametrize("older_than", [timedelta(0), timedelta(seconds=-1)])
    def test_prune_refuses_a_cutoff_that_is_not_in_the_past(
        self, pq: ReviewQueue, clock: FakeClock, older_than: timedelta
    ) -> None:
        finished_run(pq, 1, ParkedRunStatus.RESUMED)
        clock.advance(DAY)
        head, before = pq.store.audit_head(), pq.parked_runs(statuses=tuple(ParkedRunStatus))
        with pytest.raises(ConfigurationError, match="older_than must be more than zero"):
            pq.prune_parked_states(older_than=older_than, include_failed=True)
        with pytest.raises(ConfigurationError, match="older_than must be more than zero"):
            pq.prunable_parked_states(older_than=older_than)
        assert pq.store.audit_head() == head and pq.parked_runs(statuses=tuple(ParkedRunStatus)) == before

    def test_a_cutoff_before_any_date_prunes_nothing(self, pq: ReviewQueue, clock: FakeClock) -> None:
        finished_run(pq, 1, ParkedRunStatus.RESUMED)
        assert pq.prune_parked_states(older_than=timedelta(days=999_999_999)) == []

    def test_park_refuses_an_empty_state_which_would_read_as_pruned(self, pq: ReviewQueue) -> None:
        submitted = pq.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"}, run="r1"))
        assert submitted.request is not None
        head = pq.store.audit_head()
        with pytest.raises(AdapterError, match="an empty state means it was pruned"):
            pq.park(framework="langgraph", run="r1", request_ids=[submitted.request.id], state="")
        assert pq.store.audit_head() == head and pq.parked_runs(statuses=tuple(ParkedRunStatus)) == []

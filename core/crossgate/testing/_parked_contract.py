"""The store contract's parked runs: their lifecycle (claim, finish, retry, change) and the pruning of their
states, at the store and through the queue. ``StoreContract`` includes it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

import crossgate._parked_runs
from crossgate import (
    AdapterError,
    Approve,
    ConfigurationError,
    ConflictError,
    ParkedRun,
    ParkedRunStatus,
    Policy,
    ReviewQueue,
    Store,
    ToolCall,
    lifecycle,
)
from crossgate.audit import verify_log
from crossgate.model import NewEvent
from crossgate.stores.base import Change, PruneEvent
from crossgate.testing._store_records import T0, ev, make_parked, one_chain
from crossgate.testing.clock import FakeClock
from crossgate.testing.fixtures import QueueFactory, StoreBacked


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


class ParkedRunScenarios(StoreBacked):
    """Parked runs as the queue relies on them: leases, retries, checked changes, and pruned states."""

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
        assert store.audit_head()[0] == head[0] + 1
        if one_chain(store):  # with several, the head's hash is their root (checked by verify_log)
            assert events[0].prev_hash == head[1] and store.audit_head()[1] == events[0].hash
        assert verify_log(store).ok
        # the ids come back in the order given; a state pruned already is not pruned (nor recorded) again
        assert prune_runs(store, ["park-5", "park-2", "park-1"], FINISHED, prune_event) == ["park-5", "park-2"]
        assert [p.state for p in store.list_parked_runs()] == ["", "", '{"run": 3}', '{"run": 4}', ""]
        assert store.list_events()[-1].payload == {"parked_runs": ["park-5", "park-2"]}
        assert store.audit_head()[0] == head[0] + 2
        assert verify_log(store).ok

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
        assert verify_log(store).ok

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

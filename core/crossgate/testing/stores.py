"""``StoreContract``: the ``Store`` protocol as the queue relies on it. Every store must pass it unchanged.

Subclass it in your store's tests and give ``make_store``::

    class TestMyStore(StoreContract):
        def make_store(self, tmp_path: Path) -> Store:
            return MyStore(tmp_path / "store.db")

This module holds the request, rule and event tests; the parked-run and pruning tests are in
``_parked_contract``, the delivery-cursor tests in ``_cursor_contract``, the signed state in ``signed_state``,
and the records they build in ``_store_records``. Their helpers stay importable from here.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from crossgate import ApprovalRequest, ConflictError, RequestQuery, RequestStatus, Store
from crossgate.audit import GENESIS_HASH, heads_root, verify_log
from crossgate.errors import InvalidArgumentsError
from crossgate.model import NewEvent
from crossgate.testing._cursor_contract import LEASE, CursorStore, DeliveryCursorScenarios
from crossgate.testing._parked_contract import (
    DAY,
    FINISHED,
    ParkedRunScenarios,
    claim_run,
    finish_run,
    finished_run,
    parked_in,
    prune_event,
    prune_runs,
    retry_run,
)
from crossgate.testing._store_records import T0, audit_cut, ev, make_parked, make_request, make_rule, one_chain
from crossgate.testing.signed_state import SignedStateScenarios

__all__ = [
    "DAY",
    "FINISHED",
    "LEASE",
    "T0",
    "CursorStore",
    "StoreContract",
    "claim_run",
    "ev",
    "finish_run",
    "finished_run",
    "make_parked",
    "make_request",
    "make_rule",
    "parked_in",
    "prune_event",
    "prune_runs",
    "retry_run",
]


class StoreContract(ParkedRunScenarios, DeliveryCursorScenarios, SignedStateScenarios):
    """Every store operation the queue relies on: compare-and-set updates, pages, leases, the audit chain, pruning,
    and the signed state (policy versions, checkpoints: ``crossgate.testing.signed_state``). Parked runs and
    pruning come from ``ParkedRunScenarios``, delivery cursors from ``DeliveryCursorScenarios``.

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

    def test_one_failing_update_among_racing_ones_fails_alone_and_leaves_no_trace(self, store: Store) -> None:
        # Stores that commit waiting updates together (SQLite, PostgreSQL) must keep a failure its own.
        requests = [make_request(n) for n in range(1, 10)]
        for request in requests:
            store.insert_request(request, ev("submitted", request.id))
        poisoned = requests[4].id
        results: dict[str, object] = {}
        barrier = threading.Barrier(len(requests))

        def decide(request: ApprovalRequest) -> None:
            decided = request.model_copy(update={"status": RequestStatus.DECIDED})
            # Not JSON (built without validation): sealing it raises, inside whatever transaction it shares.
            event = ev("decided", request.id)
            if request.id == poisoned:
                event = NewEvent.model_construct(**{**event.__dict__, "payload": {"bad": object()}})
            barrier.wait()
            try:
                results[request.id] = store.update_request(decided, (RequestStatus.PENDING,), event)
            except Exception as exc:
                results[request.id] = exc

        threads = [threading.Thread(target=decide, args=(request,)) for request in requests]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert isinstance(results[poisoned], InvalidArgumentsError)
        assert store.get_request(poisoned).status is RequestStatus.PENDING  # type: ignore[union-attr]
        for request in requests:
            if request.id != poisoned:
                assert store.get_request(request.id).status is RequestStatus.DECIDED  # type: ignore[union-attr]
                assert results[request.id].request_id == request.id  # type: ignore[attr-defined]
        decided = sorted(str(e.request_id) for e in store.list_events() if e.kind == "decided")
        assert decided == sorted(r.id for r in requests if r.id != poisoned)
        assert verify_log(store).ok

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

    def test_events_form_a_verifiable_chain_and_filter_by_request(self, store: Store) -> None:
        store.append_event(ev("a", "req-1", n=1))
        store.append_event(ev("b", "req-2", text="héllo ✓", number=1.5))
        store.append_event(ev("c", "req-1", nested={"z": [1, 2], "a": None}))
        events = store.list_events()
        assert [e.seq for e in events] == [1, 2, 3]
        assert events[1].prev_hash == events[0].hash
        assert events[1].payload == {"text": "héllo ✓", "number": 1.5}
        assert verify_log(store).ok
        assert [e.kind for e in store.list_events(request_id="req-1")] == ["a", "c"]
        assert [e.kind for e in store.list_events(after=1, limit=1)] == ["b"]
        assert store.audit_head() == (3, events[-1].hash if one_chain(store) else heads_root(audit_cut(store)))

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

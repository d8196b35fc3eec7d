"""The store contract's delivery cursors: a named position in the log, held under a lease by one owner at a
time and never moved backwards. ``StoreContract`` includes it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

import pytest

from crossgate import ConfigurationError, Store
from crossgate.stores.cursors import DeliveryCursor, DeliveryCursors
from crossgate.testing._store_records import T0
from crossgate.testing.fixtures import StoreBacked


class CursorStore(Store, DeliveryCursors, Protocol):
    """A store that keeps delivery cursors too, as the project's stores do; the cursor tests need one."""


LEASE = timedelta(seconds=30)


class DeliveryCursorScenarios(StoreBacked):
    """Delivery cursors: claims, leases, advances and releases, one holder at a time."""

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

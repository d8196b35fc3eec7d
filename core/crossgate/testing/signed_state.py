"""The store contract's signed state: policy versions and audit checkpoints. ``StoreContract`` includes it.

A policy version is stored only as the next number, with its event, and moves ``rules_version``; two
racing operators cannot both store the same number. A checkpoint is bookkeeping (no event), one per
``seq``, and an authored checkpoint replaces one that is not, never the other way round.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from crossgate import ConflictError, Store
from crossgate.audit import verify_log
from crossgate.model import NewEvent
from crossgate.stores.base import Checkpoint, PolicyVersion
from crossgate.testing.fixtures import StoreBacked

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def make_version(n: int, *, by: str = "ann") -> PolicyVersion:
    return PolicyVersion(
        version=n,
        document=f'{{"rules":[],"n":{n}}}',
        token=f"token-{n}",
        digest=f"{n:064x}",
        created_by=by,
        created_at=T0 + timedelta(minutes=n),
        source=f"policy-{n}.yaml",
    )


def make_checkpoint(seq: int, *, authored: bool = False, token: str | None = None) -> Checkpoint:
    return Checkpoint(
        seq=seq,
        head_hash=f"{seq:064x}",
        at=T0 + timedelta(seconds=seq),
        token=token or f"checkpoint-{seq}-{authored}",
        authored=authored,
    )


def applied(n: int) -> NewEvent:
    return NewEvent(kind="policy_applied", at=T0, actor="ann", payload={"version": n})


class SignedStateScenarios(StoreBacked):
    """Policy versions and checkpoints, as the queue and ``crossgate.checkpoints`` rely on them."""

    def test_policy_versions_are_stored_in_order_with_their_event(self, store: Store) -> None:
        assert store.get_policy_version() is None
        assert store.list_policy_versions() == []
        before = store.rules_version()
        first = store.insert_policy_version(make_version(1), applied(1))
        assert store.rules_version() != before
        second = store.insert_policy_version(make_version(2, by="bob"), applied(2))
        assert (first.seq, second.seq) == (1, 2)
        assert store.get_policy_version() == make_version(2, by="bob")
        assert store.get_policy_version(1) == make_version(1)
        assert store.get_policy_version(3) is None
        assert store.list_policy_versions() == [make_version(1), make_version(2, by="bob")]
        events = store.list_events()
        assert [e.payload["version"] for e in events] == [1, 2]
        assert verify_log(store).ok

    @pytest.mark.parametrize(("stored", "number"), [(0, 2), (1, 1), (2, 1)])
    def test_a_version_that_is_not_the_next_one_is_refused_and_stores_nothing(
        self, store: Store, stored: int, number: int
    ) -> None:
        for n in range(1, stored + 1):
            store.insert_policy_version(make_version(n), applied(n))
        head, kept = store.audit_head(), store.list_policy_versions()
        with pytest.raises(ConflictError):
            store.insert_policy_version(make_version(number, by="mallory"), applied(number))
        assert store.list_policy_versions() == kept
        assert store.audit_head() == head

    def test_only_one_of_racing_inserts_of_the_same_version_wins(self, store: Store) -> None:
        wins: list[int] = []
        conflicts: list[int] = []
        start = threading.Barrier(4)

        def insert(i: int) -> None:
            start.wait()
            try:
                store.insert_policy_version(make_version(1, by=f"op{i}"), applied(1))
                wins.append(i)
            except ConflictError:
                conflicts.append(i)

        threads = [threading.Thread(target=insert, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(wins) == 1 and len(conflicts) == 3
        assert [v.created_by for v in store.list_policy_versions()] == [f"op{wins[0]}"]
        assert len(store.list_events()) == 1

    def test_checkpoints_are_kept_by_seq_and_append_no_event(self, store: Store) -> None:
        assert store.latest_checkpoint() is None
        for seq in (3, 0, 7):
            store.insert_checkpoint(make_checkpoint(seq))
        assert [c.seq for c in store.list_checkpoints()] == [0, 3, 7]
        assert store.latest_checkpoint() == make_checkpoint(7)
        assert store.list_events() == []
        assert store.audit_head()[0] == 0

    def test_an_authored_checkpoint_replaces_a_head_one_and_never_the_reverse(self, store: Store) -> None:
        store.insert_checkpoint(make_checkpoint(5))
        store.insert_checkpoint(make_checkpoint(5, token="a later head checkpoint"))
        assert store.list_checkpoints() == [make_checkpoint(5)]  # the first one at a seq stays
        store.insert_checkpoint(make_checkpoint(5, authored=True))
        assert store.list_checkpoints() == [make_checkpoint(5, authored=True)]
        store.insert_checkpoint(make_checkpoint(5))
        store.insert_checkpoint(make_checkpoint(5, authored=True, token="another authored one"))
        assert store.list_checkpoints() == [make_checkpoint(5, authored=True)]

"""Fixtures shared by the conformance suites: every store, each scenario on a fresh one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crossgate import MemoryStore, Policy, ReviewQueue, Store
from crossgate.stores.sqlite import Durability, SqliteStore

StoreFactory = Callable[[], Store]


def _memory(tmp_path: Path) -> StoreFactory:
    return MemoryStore


def _sqlite(tmp_path: Path, durability: Durability = "full") -> StoreFactory:
    counter = iter(range(1_000_000))
    return lambda: SqliteStore(tmp_path / f"store-{next(counter)}.db", durability=durability)


def _postgres(tmp_path: Path) -> StoreFactory:
    try:
        from tests.support.postgres import postgres_store_factory
    except ImportError:
        pytest.skip("PostgreSQL store support is not in this checkout")
    return postgres_store_factory()


STORE_KINDS: dict[str, Callable[[Path], StoreFactory]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    # The lighter SQLite durabilities only change when commits reach the disk: every scenario must behave the same.
    "sqlite-decisions": lambda tmp_path: _sqlite(tmp_path, "decisions"),
    "sqlite-normal": lambda tmp_path: _sqlite(tmp_path, "normal"),
    "postgres": _postgres,
}


@pytest.fixture(params=[pytest.param(k, marks=[pytest.mark.postgres] if k == "postgres" else []) for k in STORE_KINDS])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Makes fresh, set-up stores of one kind; the test may open several (e.g. to reopen after a crash)."""
    return STORE_KINDS[request.param](tmp_path)


@pytest.fixture
def store(store_factory: StoreFactory) -> Iterator[Store]:
    """A fresh store of each kind."""
    made = store_factory()
    made.setup()
    yield made
    made.close()


@pytest.fixture
def queue(store: Store) -> Iterator[ReviewQueue]:
    """A queue on a fresh store with the default policy (everything asks); its watcher stops before the store closes."""
    made = ReviewQueue(store, Policy())
    yield made
    made.close()


QueueFactory = Callable[..., ReviewQueue]


@pytest.fixture
def queue_with(store: Store) -> Iterator[QueueFactory]:
    """Build queues on the fresh store with a given policy (and clock); each is closed before the store."""
    made: list[ReviewQueue] = []

    def build(policy: Policy, **kwargs: object) -> ReviewQueue:
        queue = ReviewQueue(store, policy, **kwargs)  # type: ignore[arg-type]
        made.append(queue)
        return queue

    yield build
    for queue in made:
        queue.close()

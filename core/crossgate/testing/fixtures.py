"""Fixtures every store-backed contract shares: fresh stores from the subclass's ``make_store``, queues on them."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from crossgate import Policy, ReviewQueue, Store
from crossgate.testing.contract import Contract

QueueFactory = Callable[..., ReviewQueue]
"""Builds a queue on the test's store: ``(policy, **ReviewQueue options)``."""


class StoreBacked(Contract):
    """A contract run on fresh stores of one kind, which the subclass makes."""

    required: ClassVar[tuple[str, ...]] = ("make_store",)

    @abstractmethod
    def make_store(self, tmp_path: Path) -> Store:
        """A new store, each call a fresh one (empty, on its own file or schema); the kit calls ``setup()``."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        """A fresh, set-up store; closed after the test."""
        made = self.make_store(tmp_path)
        made.setup()
        yield made
        made.close()

    @pytest.fixture
    def queue(self, store: Store) -> Iterator[ReviewQueue]:
        """A queue on the fresh store with the default policy (everything asks); closed before the store."""
        made = ReviewQueue(store, Policy())
        yield made
        made.close()

    @pytest.fixture
    def queue_with(self, store: Store) -> Iterator[QueueFactory]:
        """Build queues on the fresh store with a given policy (and clock); each is closed before the store."""
        made: list[ReviewQueue] = []

        def build(policy: Policy, **kwargs: object) -> ReviewQueue:
            queue = ReviewQueue(store, policy, **kwargs)  # type: ignore[arg-type]
            made.append(queue)
            return queue

        yield build
        for queue in made:
            queue.close()

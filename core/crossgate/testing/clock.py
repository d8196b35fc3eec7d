"""A clock the test moves by hand, for the queue's ``clock=``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class FakeClock:
    """Returns ``now`` until the test moves it with :meth:`advance`."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

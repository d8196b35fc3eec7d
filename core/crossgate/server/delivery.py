"""``CursorLease``: this server's hold on one delivery cursor in the store, kept alive while it delivers.

A delivery cursor says how far one consumer of the event log (a webhook target) has got. Whoever holds
its lease is the one process delivering for that consumer; the lease is renewed every third of its
length, and once it runs out unrenewed (its holder died) another process claims it and goes on from
the stored seq. See ``DeliveryCursors.claim_delivery_cursor`` for the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

import anyio

from crossgate.clock import utc_now
from crossgate.model import Event
from crossgate.stores.cursors import DeliveryCursor, DeliveryCursors

log = logging.getLogger(__name__)


class CursorLease:
    """A delivery cursor this process holds: the stored seq, and how far it has read past it.

    ``seq`` is what the store holds; ``position`` (never behind it) also counts events read that needed
    no delivery, which are written back with the next advance or renewal, not one write each.
    """

    def __init__(self, store: DeliveryCursors, cursor: DeliveryCursor, owner: str, seconds: float) -> None:
        self._store = store
        self.name = cursor.name
        self.owner = owner
        self.seconds = seconds
        self.seq = self.position = cursor.seq
        self.until = cursor.lease_until or utc_now()
        self._lock = asyncio.Lock()  # renewals and advances write in turn, each with the newest position

    @classmethod
    async def claim(
        cls, store: DeliveryCursors, name: str, owner: str, seconds: float, start: int
    ) -> CursorLease | None:
        """Take the lease on cursor ``name`` (created at ``start`` if new); None while another owner holds it."""
        until = utc_now() + timedelta(seconds=seconds)
        cursor = await anyio.to_thread.run_sync(store.claim_delivery_cursor, name, owner, utc_now(), until, start)
        return None if cursor is None else cls(store, cursor, owner, seconds)

    def skip(self, seq: int) -> None:
        """Note that the events up to ``seq`` need nothing (stored with the next write)."""
        self.position = max(self.position, seq)

    async def advance(self, seq: int) -> bool:
        """Store ``seq`` as done and renew the lease; False once the lease is no longer this process's."""
        return await self._write(seq)

    async def renew(self) -> bool:
        """Renew the lease (storing the position read so far); False once it is no longer this process's."""
        return await self._write(None)

    async def _write(self, seq: int | None) -> bool:
        async with self._lock:
            target = max(self.position, seq or 0)
            until = utc_now() + timedelta(seconds=self.seconds)
            cursor = await anyio.to_thread.run_sync(
                self._store.advance_delivery_cursor, self.name, self.owner, target, until
            )
            if cursor is None:
                return False
            self.seq = self.position = cursor.seq
            self.until = until
            return True

    async def keep(self) -> None:
        """Renew every third of the lease; return once it is lost (taken over, or ran out unrenewed)."""
        while True:
            await asyncio.sleep(self.seconds / 3)
            try:
                if not await self.renew():
                    log.warning("crossgate lost the delivery lease on %s to another server", self.name[:24])
                    return
            except Exception:  # a store hiccup: the lease stays ours until it runs out
                log.warning("crossgate could not renew the delivery lease on %s", self.name[:24], exc_info=True)
                if utc_now() >= self.until:
                    return

    async def release(self) -> None:
        """Give the lease up, so another server need not wait for it to run out."""
        await anyio.to_thread.run_sync(self._store.release_delivery_cursor, self.name, self.owner)


async def wait_until_due(event: Event, after: float, now: datetime, stopping: asyncio.Event) -> bool:
    """Wait until ``event`` is ``after`` seconds old (an escalation's delay); False if ``stopping`` came first."""
    delay = (event.at + timedelta(seconds=after) - now).total_seconds()
    if delay <= 0:
        return True
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), delay)
        return False
    return True

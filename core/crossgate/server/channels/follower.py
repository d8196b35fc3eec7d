"""``LogFollower``: one channel's way through the event log, from its own durable delivery cursor.

It claims the cursor's lease (one server per channel, as for webhooks), hands each event of the kinds
it wants to the channel, and stores the cursor past it once the channel is done. A channel that is
unreachable raises :class:`ChannelUnavailable`: the follower waits (doubling, up to a minute) and hands
it the same event again, without moving the cursor, so nothing is skipped while Slack or the mail
server is down, and the request stays pending meanwhile. Any other error is logged and counted, and
the cursor moves on: one message that cannot be built must not hold back the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
from collections import Counter
from collections.abc import Awaitable, Callable

import anyio

from crossgate.errors import CrossgateError
from crossgate.model import ApprovalRequest, Event, event_kind
from crossgate.server.delivery import CursorLease, wait_until_due
from crossgate.server.state import ServerState
from crossgate.stores.cursors import DeliveryCursors, delivery_cursors

log = logging.getLogger(__name__)
MAX_RETRY_SECONDS = 60.0
STOP_GRACE_SECONDS = 5.0
READ_BATCH = 100

Handler = Callable[[Event, ApprovalRequest], Awaitable[None]]
"""What a channel does with one event of a request (given as it is now)."""


class ChannelUnavailable(CrossgateError):
    """The channel's service cannot be reached now; the same event is handed over again later."""


class LogFollower:
    """Follows the log for one channel: ``kinds`` of events, each handed to ``handle`` in order."""

    def __init__(
        self,
        state: ServerState,
        name: str,
        kinds: frozenset[str],
        handle: Handler,
        *,
        retry_seconds: float,
        delay_seconds: float | None = None,
    ) -> None:
        self._state = state
        self.name = name
        self._kinds = kinds
        self._handle = handle
        self._retry = retry_seconds
        self._delay = delay_seconds
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease_seconds = state.settings.webhook_lease_seconds
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.counts: Counter[str] = Counter()

    def stats(self) -> dict[str, int]:
        """Events handed over, tries again while the channel was unavailable, and events given up on."""
        return {k: self.counts[k] for k in ("delivered", "retries", "failed")}

    async def start(self) -> None:
        """Start following; a cursor new to the store starts at the log's current head."""
        cursors = delivery_cursors(self._state.queue.store)
        head = self._state.feed.head
        self._task = asyncio.create_task(self._serve(cursors, head), name=f"crossgate-channel {self.name}")

    async def stop(self) -> None:
        """Stop and give the lease up; the cursor keeps its place.

        A delivery under way gets up to ``STOP_GRACE_SECONDS`` to finish and store the cursor, so a clean
        stop (a deploy) sends nothing twice.
        """
        self._stopping.set()
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), STOP_GRACE_SECONDS)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        store = delivery_cursors(self._state.queue.store)
        try:
            await anyio.to_thread.run_sync(store.release_delivery_cursor, self.name, self._owner)
        except Exception:  # the lease then runs out by itself
            log.warning("crossgate could not release the lease on %s", self.name, exc_info=True)

    async def _serve(self, store: DeliveryCursors, head: int) -> None:
        # Ends by itself once stopping: asyncio.wait_for on 3.11 can swallow the cancel that stop() sends
        # when the event it waits for is set at the same moment.
        while not self._stopping.is_set():
            try:
                lease = await CursorLease.claim(store, self.name, self._owner, self._lease_seconds, head)
                if lease is not None:
                    keeper = asyncio.create_task(lease.keep())
                    try:
                        await self._follow(lease, keeper)
                    finally:
                        keeper.cancel()
                        await asyncio.gather(keeper, return_exceptions=True)
            except Exception:
                log.exception("crossgate stopped following the log for %s; claiming it again", self.name)
            with contextlib.suppress(TimeoutError):
                pause = self._lease_seconds / 3 * (0.75 + random.random() / 2)
                await asyncio.wait_for(self._stopping.wait(), pause)

    async def _follow(self, lease: CursorLease, keeper: asyncio.Task[None]) -> None:
        feed = self._state.feed
        while not keeper.done() and not self._stopping.is_set():
            events = await anyio.to_thread.run_sync(self._read, lease.position)
            if not events:
                if feed.head > lease.position:
                    await asyncio.sleep(self._state.settings.sweep_seconds)
                await feed.wait_beyond(lease.position, timeout=self._lease_seconds / 3)
                continue
            for event in events:
                if event_kind(event) not in self._kinds or event.request_id is None:
                    lease.skip(event.seq)  # stored with the next advance or renewal
                    continue
                now = self._state.queue.now()
                if self._delay is not None and not await wait_until_due(event, self._delay, now, self._stopping):
                    return
                if self._stopping.is_set():
                    return
                self._idle.clear()
                try:
                    if not await self._deliver(event, keeper) or not await lease.advance(event.seq):
                        return
                finally:
                    self._idle.set()

    async def _deliver(self, event: Event, keeper: asyncio.Task[None]) -> bool:
        """Hand ``event`` to the channel, again while it is unavailable; False if the lease was lost meanwhile."""
        assert event.request_id is not None
        pause = self._retry
        while not keeper.done() and not self._stopping.is_set():
            try:
                request = await anyio.to_thread.run_sync(self._state.queue.get, event.request_id)
                await self._handle(event, request)
                self.counts["delivered"] += 1
                return True
            except ChannelUnavailable as exc:
                self.counts["retries"] += 1
                log.warning("crossgate: %s is unavailable (%s); trying event %s again", self.name, exc, event.seq)
            except Exception:
                self.counts["failed"] += 1
                log.exception("crossgate: %s could not handle event %s; moving past it", self.name, event.seq)
                return True
            with contextlib.suppress(TimeoutError):  # a stop cuts the pause short; the event stays due
                await asyncio.wait_for(self._stopping.wait(), pause * (0.75 + random.random() / 2))
            pause = min(pause * 2, MAX_RETRY_SECONDS)
        return False

    def _read(self, after: int) -> list[Event]:
        return self._state.queue.events(after=after, limit=READ_BATCH)

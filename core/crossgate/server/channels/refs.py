"""Which chat message shows which request: kept in the store, so a message is updated after a restart too.

A Slack message is named by its channel and its ``ts`` (``"1700000000.123456"``). The reference lives
in the delivery-cursor table, which every store has: the cursor ``slack-message:<channel>:<request>``
holds the ``ts`` as whole microseconds in its seq. Like cursors, references are bookkeeping, not audited
state; the decision itself is in the log.
"""

from __future__ import annotations

from datetime import timedelta

from crossgate.clock import utc_now
from crossgate.stores.cursors import DeliveryCursors

_MICRO = 1_000_000


def _name(channel: str, request_id: str) -> str:
    return f"slack-message:{channel}:{request_id}"


def ts_to_seq(ts: str) -> int:
    """A Slack ``ts`` as whole microseconds; ValueError if it is not ``seconds.micros``."""
    seconds, dot, micros = ts.partition(".")
    if not (seconds.isdigit() and dot and micros.isdigit() and len(micros) <= 6):
        raise ValueError(f"not a Slack message ts: {ts!r}")
    return int(seconds) * _MICRO + int(micros.ljust(6, "0"))


def seq_to_ts(seq: int) -> str:
    """The Slack ``ts`` that :func:`ts_to_seq` turned into ``seq``."""
    return f"{seq // _MICRO}.{seq % _MICRO:06d}"


def remember_message(store: DeliveryCursors, channel: str, request_id: str, ts: str, owner: str) -> None:
    """Store that ``request_id``'s message in ``channel`` is ``ts`` (a first reference is kept)."""
    now = utc_now()
    store.claim_delivery_cursor(_name(channel, request_id), owner, now, now + timedelta(microseconds=1), ts_to_seq(ts))


def message_ts(store: DeliveryCursors, channel: str, request_id: str) -> str | None:
    """The ``ts`` of ``request_id``'s message in ``channel``, or None if none was posted."""
    cursor = store.get_delivery_cursor(_name(channel, request_id))
    return None if cursor is None else seq_to_ts(cursor.seq)

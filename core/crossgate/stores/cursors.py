"""Delivery cursors: how far each consumer of the event log (a webhook target) has got, and who holds it.

A small protocol of its own, beside ``Store``: the webhook sender needs it, the review queue does not.
Claims and advances are compare-and-sets on the lease, so two servers never both deliver one target's
events; cursors are bookkeeping rather than audited state, so changing one appends no event. The
project's stores (memory, SQLite, PostgreSQL) implement it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from crossgate.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class DeliveryCursor:
    """How far one consumer of the event log (a webhook target, say) has got, and who holds it.

    ``seq`` is the last event the consumer is done with. ``lease_owner`` holds the cursor until
    ``lease_until``; both are None once released. Cursors are bookkeeping, not audited state: changing
    one appends no event.
    """

    name: str
    seq: int
    lease_owner: str | None = None
    lease_until: datetime | None = None


def check_delivery_cursor_args(name: str, owner: str, seq: int = 0) -> None:
    """Refuse an empty cursor name or owner, or a negative seq, with a ConfigurationError before anything is stored."""
    if not name:
        raise ConfigurationError("a delivery cursor needs a name")
    if not owner:
        raise ConfigurationError(f"delivery cursor {name!r}: the lease owner cannot be empty")
    if seq < 0:
        raise ConfigurationError(f"a delivery cursor's seq cannot be negative, got {seq}")


def delivery_cursor_claimable(cursor: DeliveryCursor, owner: str, now: datetime) -> bool:
    """True if ``owner`` may take ``cursor``: it is released, already ``owner``'s, or its lease ran out."""
    if cursor.lease_owner is None or cursor.lease_owner == owner:
        return True
    return cursor.lease_until is None or cursor.lease_until <= now


def delivery_cursor_advanceable(cursor: DeliveryCursor, owner: str, seq: int) -> bool:
    """True if ``owner`` holds ``cursor`` and ``seq`` does not move it backwards."""
    return cursor.lease_owner == owner and seq >= cursor.seq


@runtime_checkable
class DeliveryCursors(Protocol):
    """Persistence for delivery cursors."""

    def claim_delivery_cursor(
        self, name: str, owner: str, now: datetime, lease_until: datetime, start: int
    ) -> DeliveryCursor | None:
        """Take the lease on cursor ``name`` until ``lease_until``, creating the cursor at seq ``start``.

        The lease is taken when the cursor is new, released, already ``owner``'s (a renewal), or its
        lease ran out by ``now``. Returns the claimed cursor (its stored seq, not ``start``, when it
        exists), or None while another owner's lease is live. ConfigurationError for an empty name or
        a negative ``start``.
        """

    def advance_delivery_cursor(self, name: str, owner: str, seq: int, lease_until: datetime) -> DeliveryCursor | None:
        """Move cursor ``name`` to ``seq`` and renew its lease, a compare-and-set on the lease owner.

        None, and nothing changes, if ``owner`` does not hold the lease (it was taken over or released)
        or ``seq`` is behind the stored seq: a cursor never moves backwards. ``seq`` equal to the stored
        one only renews the lease. ConfigurationError for an empty name or owner, or a negative ``seq``.
        """

    def release_delivery_cursor(self, name: str, owner: str) -> DeliveryCursor | None:
        """Give up ``owner``'s lease on cursor ``name``, keeping its seq; None if ``owner`` did not hold it."""

    def get_delivery_cursor(self, name: str) -> DeliveryCursor | None:
        """The cursor with this name, or None."""


def delivery_cursors(store: object) -> DeliveryCursors:
    """``store`` as the :class:`DeliveryCursors` it implements; ConfigurationError if it keeps none."""
    if not isinstance(store, DeliveryCursors):
        raise ConfigurationError(f"{type(store).__name__} keeps no delivery cursors, which webhooks need")
    return store

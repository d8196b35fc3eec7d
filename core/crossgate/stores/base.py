"""The ``Store`` protocol: the narrow set of operations the review queue needs from a database.

Every state change is a compare-and-set together with its audit event in one transaction, so racing
reviewers, resumers or processes cannot both win, and no change is ever recorded without its event.
Stores raise :class:`~crossgate.errors.StoreError` for driver failures and never enforce policy.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar, runtime_checkable

from crossgate.errors import ConfigurationError
from crossgate.model import (
    ApprovalRequest,
    Event,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    StandingRule,
)

T = TypeVar("T")

MAX_PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class RequestQuery:
    """Filters and paging for listing requests; every filter is an exact match."""

    statuses: tuple[RequestStatus, ...] = ()
    framework: str | None = None
    tool: str | None = None
    agent: str | None = None
    run: str | None = None
    newest_first: bool = True
    limit: int = 50
    cursor: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE_SIZE:
            raise ConfigurationError(f"limit must be between 1 and {MAX_PAGE_SIZE}, got {self.limit}")
        if self.cursor is not None:
            decode_cursor(self.cursor)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of results and the cursor of the next page (None on the last page)."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None


def encode_cursor(position: int) -> str:
    """Opaque cursor for a position in a store's request order."""
    return base64.urlsafe_b64encode(f"p{position}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """Position encoded by :func:`encode_cursor`; raises ConfigurationError for a malformed cursor."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not text.startswith("p"):
            raise ValueError(text)
        return int(text[1:])
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"malformed cursor {cursor!r}") from exc


def claimable(parked: ParkedRun, now: datetime) -> bool:
    """True if a resumer may take ``parked``: it is parked, or its resumer's lease ran out."""
    if parked.status is ParkedRunStatus.PARKED:
        return True
    lease_over = parked.lease_until is not None and parked.lease_until <= now
    return parked.status is ParkedRunStatus.RESUMING and lease_over


def claimed_copy(parked: ParkedRun, owner: str, now: datetime, lease_until: datetime) -> ParkedRun:
    """``parked`` as it looks once ``owner`` holds its lease."""
    return parked.model_copy(
        update={
            "status": ParkedRunStatus.RESUMING,
            "lease_owner": owner,
            "lease_until": lease_until,
            "attempts": parked.attempts + 1,
            "updated_at": now,
        }
    )


def finished_copy(parked: ParkedRun, status: ParkedRunStatus, outcome: str | None, now: datetime) -> ParkedRun:
    """``parked`` as it looks once its resume ended."""
    return parked.model_copy(update={"status": status, "outcome": outcome, "lease_until": None, "updated_at": now})


def holds_lease(parked: ParkedRun, owner: str) -> bool:
    """True if ``owner`` is resuming ``parked`` right now."""
    return parked.status is ParkedRunStatus.RESUMING and parked.lease_owner == owner


@runtime_checkable
class Store(Protocol):
    """Persistence for requests, standing rules, parked runs and the event log."""

    def setup(self) -> None:
        """Create or migrate the schema; safe to call more than once."""

    def close(self) -> None:
        """Release connections."""

    # requests
    def insert_request(self, request: ApprovalRequest, event: NewEvent) -> Event:
        """Store a new request and its event atomically."""

    def get_request(self, request_id: str) -> ApprovalRequest | None:
        """The request with this id, or None."""

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        """One page of requests matching ``query``, in insertion order or its reverse."""

    def update_request(
        self, request: ApprovalRequest, expected: Sequence[RequestStatus], event: NewEvent
    ) -> Event | None:
        """Replace the stored request if its status is one of ``expected``; None when it was not."""

    def overdue_requests(self, now: datetime, limit: int = 100) -> list[ApprovalRequest]:
        """Pending requests whose ``expires_at`` is at or before ``now``."""

    # standing rules
    def insert_rule(self, rule: StandingRule, event: NewEvent) -> Event:
        """Store a new standing rule and its event atomically."""

    def get_rule(self, rule_id: str) -> StandingRule | None:
        """The rule with this id, or None."""

    def list_rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        """Standing rules in creation order."""

    def revoke_rule(self, rule: StandingRule, event: NewEvent) -> Event | None:
        """Store the revoked ``rule`` if it is not revoked yet; None when it already was."""

    # parked runs
    def insert_parked_run(
        self, parked: ParkedRun, event: NewEvent, requests: Sequence[tuple[ApprovalRequest, NewEvent]] = ()
    ) -> Event:
        """Store a parked run and its event, and first any new ``requests`` with theirs, in one transaction.

        ConflictError (and nothing stored) if the run or one of the requests exists already.
        """

    def get_parked_run(self, parked_id: str) -> ParkedRun | None:
        """The parked run with this id, or None."""

    def list_parked_runs(
        self, *, statuses: Sequence[ParkedRunStatus] = (), framework: str | None = None, run: str | None = None
    ) -> list[ParkedRun]:
        """Parked runs in creation order, filtered by status, framework and run."""

    def claim_parked_run(
        self, parked_id: str, owner: str, now: datetime, lease_until: datetime, event: NewEvent
    ) -> ParkedRun | None:
        """Take the lease on a parked run that is parked, or resuming with a lease that ran out.

        Returns the claimed run (status ``resuming``), or None if it is resumed, failed or leased.
        """

    def finish_parked_run(
        self, parked_id: str, owner: str, status: ParkedRunStatus, outcome: str | None, now: datetime, event: NewEvent
    ) -> ParkedRun | None:
        """End a resume the caller holds the lease for; None if ``owner`` no longer holds it."""

    # events
    def append_event(self, event: NewEvent) -> Event:
        """Append one event to the chain."""

    def list_events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        """Events with ``seq > after`` in order."""

    def audit_head(self) -> tuple[int, str]:
        """Sequence number and hash of the last event, recorded apart from the events themselves."""

    def wait_for_change(self, after: int, timeout: float) -> int:
        """Block until an event with ``seq > after`` exists or ``timeout`` seconds pass; return the last seq."""

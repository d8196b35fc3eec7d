"""The ``Store`` protocol: the narrow set of operations the review queue needs from a database.

Every state change is a compare-and-set together with its audit event in one transaction, so racing
reviewers, resumers or processes cannot both win, and no change is ever recorded without its event.
Delivery cursors (how far a webhook target's notifications have got) are compare-and-sets too, but
bookkeeping rather than audited state, so they append no event.
Stores raise :class:`~crossgate.errors.StoreError` for driver failures and never enforce policy.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Container, Sequence
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


def check_schema_version(found: int, known: int) -> None:
    """ConfigurationError if the database's schema (version ``found``) is newer than this code's (``known``).

    Older code on a newer schema could misread rows or skip a newer invariant, so it refuses to start.
    """
    if found > known:
        raise ConfigurationError(
            f"database schema version {found} is newer than this crossgate ({known}); upgrade crossgate"
        )


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


def retried_copy(parked: ParkedRun, now: datetime) -> ParkedRun:
    """A failed ``parked`` run offered for resuming again: parked, no lease, no outcome."""
    return parked.model_copy(
        update={
            "status": ParkedRunStatus.PARKED,
            "lease_owner": None,
            "lease_until": None,
            "outcome": None,
            "updated_at": now,
        }
    )


def retriable(parked: ParkedRun) -> bool:
    """True if ``parked`` failed and still has the SDK state a retry resumes from (it was not pruned)."""
    return parked.status is ParkedRunStatus.FAILED and parked.state != ""


PRUNABLE_STATUSES = frozenset({ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED})
"""The only statuses whose SDK state may be pruned: a parked or resuming run still needs its state."""

PruneEvent = Callable[[list[str]], NewEvent]
"""Builds the audit event of a prune from the ids actually pruned."""


def check_prune_statuses(statuses: Sequence[ParkedRunStatus]) -> None:
    """Refuse, with a ConfigurationError, a prune that could touch a run that may still be resumed."""
    refused = sorted(s.value for s in set(statuses) - PRUNABLE_STATUSES)
    if refused:
        raise ConfigurationError(f"the SDK state of {', '.join(refused)} runs cannot be pruned: they may be resumed")


def prunable(parked: ParkedRun, statuses: Sequence[ParkedRunStatus]) -> bool:
    """True if ``parked`` is in one of ``statuses`` and its state was not pruned yet."""
    return parked.status in statuses and parked.state != ""


def pruned_copy(parked: ParkedRun) -> ParkedRun:
    """``parked`` without its SDK state; every other field (``updated_at`` too) stays as it was."""
    return parked.model_copy(update={"state": ""})


def in_given_order(ids: Sequence[str], chosen: Container[str]) -> list[str]:
    """The ids of ``ids`` that are in ``chosen``, in their given order, each once."""
    return [i for i in dict.fromkeys(ids) if i in chosen]


def holds_lease(parked: ParkedRun, owner: str) -> bool:
    """True if ``owner`` is resuming ``parked`` right now."""
    return parked.status is ParkedRunStatus.RESUMING and parked.lease_owner == owner


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


@dataclass(frozen=True, slots=True)
class PolicyVersion:
    """One stored version of the policy, as the authority signed it.

    ``document`` is the canonical JSON of the policy (a ``Policy``'s JSON form) and ``token`` the
    authority's JWS over ``crossgate.policy_version.v1`` claims, which bind ``version`` and the document's
    digest. The other fields are copies for listing; only what the token verifies is trusted
    (:func:`crossgate.policy.versions.load_current_policy`).
    """

    version: int
    document: str
    token: str
    digest: str
    created_by: str
    created_at: datetime
    source: str | None = None
    """The file it was applied from, as given (for people; not signed)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A signed audit checkpoint: the chain head (``seq``, ``head_hash``) at ``at``, and the token over it.

    ``authored`` checkpoints were signed by the process that appended event ``seq`` itself (a decision, a
    standing rule, a policy version): see :mod:`crossgate.checkpoints`. Only what ``token`` verifies is trusted.
    Checkpoints are bookkeeping, not audited state: storing one appends no event.
    """

    seq: int
    head_hash: str
    at: datetime
    token: str
    authored: bool = False


@runtime_checkable
class Store(Protocol):
    """Persistence for requests, standing rules, parked runs, the event log, delivery cursors, policy versions
    and audit checkpoints."""

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

    def retry_parked_run(self, parked_id: str, now: datetime, event: NewEvent) -> ParkedRun | None:
        """Put a failed parked run back to parked (no lease, no outcome) with its event.

        None, and nothing changes, unless it failed and still has its SDK state (see :func:`retriable`).
        """

    def prune_parked_states(
        self, ids: Sequence[str], statuses: Sequence[ParkedRunStatus], event: PruneEvent
    ) -> list[str]:
        """Clear (set to ``""``) the SDK state of those of ``ids`` still in one of ``statuses``, in one transaction.

        The status is checked as the state is cleared, so a failed run retried since the caller listed it
        keeps its state; a state already empty is not pruned again. ``event`` is called with the ids
        actually pruned, in the order of ``ids``, and the event it builds is appended in the same
        transaction, so the log records what was done rather than what was listed. Returns those ids;
        with none, nothing changes and no event is appended. ConfigurationError (nothing changes) if
        ``statuses`` names a status other than resumed or failed.
        """

    # events
    def append_event(self, event: NewEvent) -> Event:
        """Append one event to the chain."""

    def enqueue_event(self, event: NewEvent) -> None:
        """Append ``event`` to the chain without waiting for its commit (group commit).

        For records nothing depends on (a policy allow or deny, an allowed call's outcome). The event
        is committed, in order, by the store's background writer within moments, by the next write of
        any other kind (in that write's transaction, before its change), by a read of the log in this
        process, or by ``close``. StoreError if the store could not commit earlier events.
        """

    def flush_events(self) -> None:
        """Commit every event enqueued so far, now."""

    def rules_version(self) -> int:
        """A number that changes (in every process) whenever a standing rule is added or revoked, or a
        policy version is stored.

        It may change more often; a queue keeps its active rules and its stored policy while it stays the same.
        """

    def list_events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        """Events with ``seq > after`` in order, the ones this process enqueued included."""

    def audit_head(self) -> tuple[int, str]:
        """Sequence number and hash of the last event, recorded apart from the events themselves."""

    def wait_for_change(self, after: int, timeout: float) -> int:
        """Block until an event with ``seq > after`` exists or ``timeout`` seconds pass; return the last seq."""

    # policy versions
    def insert_policy_version(self, version: PolicyVersion, event: NewEvent) -> Event:
        """Store ``version`` and its event atomically, if its number is the next one (the newest plus one).

        ConflictError, and nothing stored, when it is not: two operators applying at once cannot both win.
        Changes ``rules_version``, so queues in every process read the new current version.
        """

    def get_policy_version(self, version: int | None = None) -> PolicyVersion | None:
        """Policy version ``version``, or the newest one when None; None if there is no such version."""

    def list_policy_versions(self) -> list[PolicyVersion]:
        """Every stored policy version, oldest first."""

    # audit checkpoints
    def insert_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Keep a signed checkpoint; one per ``seq``, where an authored one replaces one that is not."""

    def list_checkpoints(self) -> list[Checkpoint]:
        """Every stored checkpoint, by ``seq``."""

    def latest_checkpoint(self) -> Checkpoint | None:
        """The stored checkpoint with the highest ``seq``, or None."""

    # delivery cursors
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

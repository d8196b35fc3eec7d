"""The ``Store`` protocol: the narrow set of operations the review queue needs from a database.

Every state change is a compare-and-set together with its audit event in one transaction, so racing
reviewers, resumers or processes cannot both win, and no change is ever recorded without its event.
Stores store; the queue decides what is legal: a request's update names the statuses it may replace,
and a parked run's change is a :class:`Change` the queue builds (``crossgate.lifecycle``).
Delivery cursors have their own protocol (``crossgate.stores.cursors``).
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


PruneEvent = Callable[[list[str]], NewEvent]
"""Builds the audit event of a change of several parked runs (a prune) from the ids actually changed."""


def in_given_order(ids: Sequence[str], chosen: Container[str]) -> list[str]:
    """The ids of ``ids`` that are in ``chosen``, in their given order, each once."""
    return [i for i in dict.fromkeys(ids) if i in chosen]


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    """A compare-and-set the queue asks a store for: store ``apply(current)`` if ``allowed(current)``.

    The store locks the stored value, calls ``allowed`` on it and, only if it holds, stores what
    ``apply`` returns, with the change's audit event, in one transaction. Which changes are legal is
    the queue's to decide (``crossgate.lifecycle``); the store only makes them atomic. With
    ``skip_locked``, a value another transaction holds right now is left alone rather than waited for
    (that writer's change wins); a store without row locks has nothing to skip.
    """

    allowed: Callable[[T], bool]
    apply: Callable[[T], T]
    skip_locked: bool = False


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
    """Persistence for requests, standing rules, parked runs, the event log, policy versions and audit
    checkpoints.

    Delivery cursors are their own protocol (``crossgate.stores.cursors.DeliveryCursors``), which the
    project's stores implement too.
    """

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

    def change_parked_run(self, parked_id: str, change: Change[ParkedRun], event: NewEvent) -> ParkedRun | None:
        """Lock the parked run and, if ``change.allowed`` holds for it, store ``change.apply`` of it with ``event``.

        Returns the stored run, or None (nothing changes, no event) if there is no such run, the change
        is not allowed, or (with ``change.skip_locked``) another transaction holds the row.
        """

    def change_parked_runs(self, ids: Sequence[str], change: Change[ParkedRun], event: PruneEvent) -> list[str]:
        """:meth:`change_parked_run` for each of ``ids`` that exists and allows it, in one transaction.

        ``event`` is called with the ids actually changed, in the order of ``ids`` (each once), and the
        event it builds is appended in the same transaction, so the log records what was done rather
        than what was listed. Returns those ids; with none, nothing changes and no event is appended.
        Rows are locked in a fixed order, so two such changes never deadlock.
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

    # the signed state head
    def put_state_head(self, kid: str, token: str, issued_at: datetime) -> None:
        """Keep ``token``, the newest state head signed with key ``kid``, in place of the one stored under ``kid``.

        One head per signing key, so a process holding another key does not replace the authority's head.
        Always replaced, so a row forged with a later date cannot keep the signer out. Bookkeeping, not
        audited state: no event. Only what the token verifies is trusted (:mod:`crossgate.state_head`: a
        head filed under one kid and signed with another is ignored); gates remember the newest head in
        their own file.
        """

    def get_state_head(self, kid: str) -> str | None:
        """The token of the state head stored under ``kid``, or None."""

"""The parked-run lifecycle: which change of a stored parked run is legal, decided by the queue, not the store.

A store only locks a row and applies a :class:`~crossgate.stores.base.Change` it is given, in one
transaction with its audit event (``Store.change_parked_run``, ``Store.change_parked_runs``). Every rule
about what may happen to a parked run lives here, once, whichever store holds it:

- a run is **claimed** (``resuming``, a lease, one more attempt) when it is parked, or resuming with a
  lease that ran out (:func:`claim`);
- a resume is **finished** (``resumed`` or ``failed``, an outcome) only by the owner of its lease
  (:func:`finish`);
- a failed run is **retried** (parked again, no lease, no outcome) only while it still has its SDK state
  (:func:`retry`);
- the SDK state of a resumed or failed run may be **pruned** (:func:`prune`); a parked or resuming run
  still needs its state.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from crossgate.errors import ConfigurationError
from crossgate.model import ParkedRun, ParkedRunStatus
from crossgate.stores.base import Change

PRUNABLE_STATUSES = frozenset({ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED})
"""The only statuses whose SDK state may be pruned: a parked or resuming run still needs its state."""


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


def holds_lease(parked: ParkedRun, owner: str) -> bool:
    """True if ``owner`` is resuming ``parked`` right now."""
    return parked.status is ParkedRunStatus.RESUMING and parked.lease_owner == owner


def finished_copy(parked: ParkedRun, status: ParkedRunStatus, outcome: str | None, now: datetime) -> ParkedRun:
    """``parked`` as it looks once its resume ended."""
    return parked.model_copy(update={"status": status, "outcome": outcome, "lease_until": None, "updated_at": now})


def retriable(parked: ParkedRun) -> bool:
    """True if ``parked`` failed and still has the SDK state a retry resumes from (it was not pruned)."""
    return parked.status is ParkedRunStatus.FAILED and parked.state != ""


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


def claim(owner: str, now: datetime, lease_until: datetime) -> Change[ParkedRun]:
    """Take the lease until ``lease_until`` on a claimable run; a run another resumer is claiming is left to it."""
    return Change(
        allowed=lambda p: claimable(p, now),
        apply=lambda p: claimed_copy(p, owner, now, lease_until),
        skip_locked=True,
    )


def finish(owner: str, status: ParkedRunStatus, outcome: str | None, now: datetime) -> Change[ParkedRun]:
    """End the resume ``owner`` holds the lease for, as ``status`` with ``outcome``."""
    return Change(allowed=lambda p: holds_lease(p, owner), apply=lambda p: finished_copy(p, status, outcome, now))


def retry(now: datetime) -> Change[ParkedRun]:
    """Park a failed run again, if it still has its SDK state."""
    return Change(allowed=retriable, apply=lambda p: retried_copy(p, now))


def prune(statuses: Sequence[ParkedRunStatus]) -> Change[ParkedRun]:
    """Clear the SDK state of a run in one of ``statuses`` (resumed, failed); ConfigurationError for others."""
    check_prune_statuses(statuses)
    chosen = tuple(statuses)
    return Change(allowed=lambda p: prunable(p, chosen), apply=pruned_copy)

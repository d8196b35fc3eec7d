"""The shape every adapter's run and resume return, the protocol the worker drives, and the one
way every adapter holds a parked run while it resumes it (:func:`resume_leased`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from crossgate.model import ParkedRun, ParkedRunStatus

if TYPE_CHECKING:
    from crossgate.queue import ReviewQueue

R = TypeVar("R", covariant=True)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Finished(Generic[R]):
    """The run ended; ``result`` is the SDK's own result object."""

    run: str
    result: R


@dataclass(frozen=True, slots=True)
class Parked:
    """The run waits for decisions; its SDK state is stored as ``parked_run`` in the queue's store."""

    run: str
    parked_run: str
    request_ids: tuple[str, ...]


RunOutcome = Finished[R] | Parked


class Resumer(Protocol):
    """What ``crossgate worker`` needs from an adapter: resume one parked run of its framework."""

    framework: str

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        """Take the parked run forward once its requests are decided."""


async def resume_leased(
    queue: ReviewQueue,
    parked: ParkedRun,
    *,
    owner: str,
    lease_seconds: float,
    body: Callable[[ParkedRun], Awaitable[Finished[T] | Parked]],
) -> Finished[T] | Parked:
    """Claim ``parked`` for ``owner``, run ``body`` with the claimed run, and close the claim.

    The claim is a lease: a run still parked is taken, and so is one whose resumer died mid-resume
    once its lease ran out (``claimed.attempts`` then counts the earlier attempts); anything that
    attempt applied is refused by ``mark_applied`` and never runs twice. Raises ParkedRunClaimedError
    for a run resumed (or failed) already, or leased by a live resumer. When ``body`` raises, the run
    is marked failed with the error (``crossgate runs retry`` offers it again) and the error goes on;
    a cancelled ``body`` keeps the lease, so another resumer takes the run over once it runs out.
    """
    claimed = queue.claim_parked(parked, owner=owner, lease_seconds=lease_seconds)
    try:
        outcome = await body(claimed)
    except Exception as exc:
        queue.finish_parked(claimed, owner=owner, status=ParkedRunStatus.FAILED, outcome=f"{type(exc).__name__}: {exc}")
        raise
    summary = "finished" if isinstance(outcome, Finished) else f"parked again as {outcome.parked_run}"
    queue.finish_parked(claimed, owner=owner, outcome=summary)
    return outcome

"""The resume sequence: hold a parked run under a lease while the adapter takes it forward."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from crossgate import tracing
from crossgate.adapter._crossing import store_call
from crossgate.clock import utc_now
from crossgate.model import ParkedRun, ParkedRunStatus
from crossgate.runs import Finished, Parked

if TYPE_CHECKING:
    from crossgate.adapter._protocol import AdapterQueue

T = TypeVar("T")


def resumer_owner(framework: str) -> str:
    """The name a gate claims parked runs under: framework, host, process and a tag of its own.

    Two gates of one process get different names, so a lease one of them holds is never taken for the other's.
    """
    return f"{framework}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def resumed_summary(outcome: Finished[object] | Parked) -> str:
    """What a closed resume records as its outcome."""
    return "finished" if isinstance(outcome, Finished) else f"parked again as {outcome.parked_run}"


async def resume_leased(
    queue: AdapterQueue,
    parked: ParkedRun | str,
    *,
    owner: str,
    lease_seconds: float,
    body: Callable[[ParkedRun], Awaitable[Finished[T] | Parked]],
) -> Finished[T] | Parked:
    """Claim ``parked`` for ``owner``, run ``body`` with the claimed run, and close the claim.

    The claim is a lease: a run still parked is taken, and so is one whose resumer died mid-resume
    once its lease ran out (``claimed.attempts`` then counts the earlier attempts); anything that
    attempt applied is refused by ``mark_applied`` and never runs twice (``run_checked`` tells the
    model what happened the first time). Raises ParkedRunClaimedError for a run resumed (or failed)
    already, or leased by a live resumer. When ``body`` raises, the run is marked failed with the
    error (``crossgate runs retry`` offers it again) and the error goes on; a cancelled ``body`` keeps
    the lease, so another resumer takes the run over once it runs out.
    """
    claimed = await store_call(queue.claim_parked, parked, owner=owner, lease_seconds=lease_seconds)
    parent = tracing.stored_context(claimed.metadata)
    attributes: tracing.Attributes = {
        "crossgate.parked_run.id": claimed.id,
        "crossgate.framework": claimed.framework,
        "crossgate.run": claimed.run,
    }
    if parent is not None:  # nobody held the wait's span open while the run was parked: record it now
        tracing.record_span(
            "crossgate.wait", parent=parent, start=claimed.created_at, end=utc_now(), attributes=attributes
        )
    with tracing.span(
        "crossgate.resume", attributes={**attributes, "crossgate.attempts": claimed.attempts}, parent=parent
    ):
        try:
            outcome = await body(claimed)
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
            await store_call(queue.finish_parked, claimed, owner=owner, status=ParkedRunStatus.FAILED, outcome=failure)
            raise
        await store_call(queue.finish_parked, claimed, owner=owner, outcome=resumed_summary(outcome))
        return outcome

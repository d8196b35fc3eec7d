"""Bodies of the processes the multi-process tests start (spawned, so each opens its own store)."""

from __future__ import annotations

import asyncio
import os
import time
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from crossgate import (
    AlreadyAppliedError,
    Approve,
    ConflictError,
    Reject,
    ReviewQueue,
    open_store,
)


def decide_race(url: str, request_id: str, reviewer: str, barrier: Barrier, results: Any) -> None:
    """Decide ``request_id`` as ``reviewer`` once every racer is ready; report "won" or the conflict."""
    queue = ReviewQueue(open_store(url))
    decision = Approve() if reviewer.endswith(("0", "2", "4", "6")) else Reject(message=f"{reviewer} says no")
    barrier.wait()
    try:
        queue.decide(request_id, decision, reviewer=reviewer)
        results.put((reviewer, "won"))
    except ConflictError as exc:
        results.put((reviewer, type(exc).__name__))
    finally:
        queue.close()


def apply_race(url: str, request_id: str, args: dict[str, Any], name: str, barrier: Barrier, results: Any) -> None:
    """Mark ``request_id`` applied once every racer is ready; report "won" or the conflict."""
    queue = ReviewQueue(open_store(url))
    barrier.wait()
    try:
        queue.mark_applied(request_id, args=args, actor=name)
        results.put((name, "won"))
    except ConflictError as exc:
        results.put((name, type(exc).__name__))
    finally:
        queue.close()


def resume(url: str, parked_id: str, owner: str, lease: float, tool_log: str, die_after: str, ready: Event) -> None:
    """Resume a parked run the way a worker does, dying by SIGKILL at ``die_after`` if it is not "never".

    Resuming is: claim the lease, mark each approved request applied, run the tool only if this call
    applied it (so a second worker never runs it again), then finish the run. ``ready`` is set at the
    point where the parent should kill this process.
    """
    queue = ReviewQueue(open_store(url))
    parked = queue.claim_parked(parked_id, owner=owner, lease_seconds=lease)
    if die_after == "claim":
        ready.set()
        time.sleep(60)
    for request_id in parked.request_ids:
        request = queue.get(request_id)
        try:
            queue.mark_applied(request_id, args=request.approved_args(), actor=owner)
        except AlreadyAppliedError:
            continue  # an earlier worker applied it; whether or not its tool ran, it never runs twice
        if die_after == "apply":
            ready.set()
            time.sleep(60)
        with Path(tool_log).open("a") as log:
            log.write(f"{owner} ran {request.call.tool} {request.call.args}\n")
    queue.finish_parked(parked_id, owner=owner, outcome=f"finished by {owner}")
    queue.close()
    ready.set()


def wait_for_decisions(url: str, inbox: Any, outbox: Any) -> None:
    """For each request id from ``inbox`` (None ends): wait for its decision, report the status and when it woke."""
    queue = ReviewQueue(open_store(url))

    async def main() -> None:
        while (request_id := await asyncio.to_thread(inbox.get)) is not None:
            outbox.put(("waiting", os.getpid()))
            request = await queue.wait(request_id, timeout=10)
            outbox.put((request.status.value, time.perf_counter()))

    asyncio.run(main())
    queue.close()

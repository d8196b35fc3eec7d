"""The resumer ``crossgate worker --app tests.postgres.ticket_resumer:make`` loads in the acceptance test.

It stands in for an adapter's resume and does what one does: claim the parked run (with a short
lease), mark each request applied, run the tool only when this call applied it, finish the run. The
tool is a line appended to ``$CG_TEST_TOOL_LOG``. A parked run whose metadata says ``hang`` hangs on its
first claim, after writing this process's pid to ``$CG_TEST_HANG_FILE``, so the test can kill the worker mid-resume.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from crossgate import AlreadyAppliedError, ReviewQueue
from crossgate.runs import Finished

FRAMEWORK = "test-sdk"
LEASE_SECONDS = 2.0


class TicketResumer:
    """Resumes ``test-sdk`` parked runs; one per worker process."""

    framework = FRAMEWORK

    def __init__(self, queue: ReviewQueue) -> None:
        self.queue = queue
        self.owner = f"worker-{os.getpid()}"

    async def resume(self, parked_run: str) -> Finished[str]:
        return await asyncio.to_thread(self._resume, parked_run)

    def _resume(self, parked_id: str) -> Finished[str]:
        parked = self.queue.claim_parked(parked_id, owner=self.owner, lease_seconds=LEASE_SECONDS)
        if parked.metadata.get("hang") and parked.attempts == 1:
            Path(os.environ["CG_TEST_HANG_FILE"]).write_text(str(os.getpid()))
            time.sleep(3600)
        for request_id in parked.request_ids:
            request = self.queue.get(request_id)
            args = request.approved_args()
            try:
                self.queue.mark_applied(request_id, args=args, actor=self.owner)
            except AlreadyAppliedError:
                continue  # applied by a worker that died afterwards: never run it twice
            if args is not None:
                with Path(os.environ["CG_TEST_TOOL_LOG"]).open("a") as log:
                    log.write(f"{request_id} {request.call.tool} {args} by {self.owner}\n")
        self.queue.finish_parked(parked_id, owner=self.owner, outcome=f"resumed by {self.owner}")
        return Finished(parked.run, self.owner)


def make(queue: ReviewQueue) -> TicketResumer:
    """The worker's ``--app`` entry point."""
    return TicketResumer(queue)

"""What an adapter plugs into ``AdapterContract``: the scenario driver.

An adapter's tests provide a ``TicketAgentDriver`` subclass: the delete-ticket agent built on that SDK,
run through the adapter's gate. ``AdapterContract`` drives every driver the same way and observes the
same things: which tickets remain, how often the delete body ran, what the model was told, and what the
queue recorded.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from crossgate import DecisionKind, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate.testing.tickets import TicketStore

TOOL = "delete_ticket"
"""The gated tool. Its one argument is ``{"id": "<ticket id>"}``; its output is ``TicketStore.delete``'s text."""


class TicketAgentDriver(ABC):
    """One SDK's delete-ticket agent behind crossgate.

    The scripted model asks to delete each ticket of ``start``'s list in order, one tool call per model
    turn, and ends with a final text once every call was answered. The tool body is
    ``tickets.delete``. The queue (with its policy and store) is the one the test built.
    """

    framework: ClassVar[str]
    capabilities: ClassVar[frozenset[DecisionKind]]
    """Decisions this SDK's adapter can express for ``delete_ticket`` (approve and reject at least)."""

    def __init__(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> None:
        self.queue = queue
        self.tickets = tickets
        self.workdir = workdir
        self.db_url = db_url
        """The store's URL, for resuming in another process."""

    @abstractmethod
    async def start(
        self, ticket_ids: Sequence[str], *, run: str, requested_by: str | None = None
    ) -> Finished[object] | Parked:
        """Run the agent until it finishes or parks (no inline wait), acting for ``requested_by``."""

    @abstractmethod
    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        """Resume a parked run in this process through the adapter's resume call."""

    def resume_command(self, parked_run: str) -> list[str]:
        """argv that resumes ``parked_run`` in a fresh Python process and exits 0 when it finished or parked.

        Needed unless the contract subclass sets ``supports_subprocess_resume = False``.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot resume in another process")

    @abstractmethod
    def tool_results(self, run: str) -> list[str]:
        """What the model was told for each ``delete_ticket`` call of ``run``, in order.

        Read from what the model actually received on its next turn (the scripted model's recorded
        input, or the mocked API's request bodies), not from the adapter's own bookkeeping.
        """

"""``StoreFailureContract``: fail closed when the store fails, through the adapter's gate and its SDK.

At the policy's verdict, when parking, and when a decision is marked applied, the gate raises crossgate's
``StoreError``: the tool does not run, the model is told nothing about the call, and a resume that failed
can be retried once the store is back. A crossgate error raised inside the SDK's tool loop ends the run
rather than reaching the model as a tool error. Subclass it with your ``TicketAgentDriver``::

    class TestMyAdapterStoreFailures(StoreFailureContract):
        driver_class = MyTicketDriver
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgate import (
    Approve,
    ConfigurationError,
    Edit,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    StoreError,
    open_store,
)
from crossgate.decisions import AnyDecision
from crossgate.model import applied_status
from crossgate.runs import Finished, Parked
from crossgate.testing.failing_store import FailingStore, applying
from crossgate.testing.gate_world import GATE_POLICY, REJECTION, GateWorld
from crossgate.testing.tickets import TicketStore

DECISIONS = [Approve(), Edit(args={"id": "t2"}), Reject(message=REJECTION), Respond(content="t3 was archived by hand")]


class RefusingQueue(ReviewQueue):
    """A queue that refuses every call it is asked to judge, as a server refusing the agent's credential would."""

    def prepare(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        raise ConfigurationError("the server refused the agent's credential")


class StoreFailureContract(GateWorld):
    """The store-failure scenarios on the subclass's ``driver_class``; the queue's store is a ``FailingStore``."""

    @pytest.fixture
    def store(self, db_url: str) -> FailingStore:
        """The test's store, failing where the test arms it."""
        return FailingStore(open_store(db_url))

    @pytest.fixture
    def failing_queue(self, store: FailingStore) -> Iterator[ReviewQueue]:
        """A queue with ``GATE_POLICY`` on the failing store."""
        made = ReviewQueue(store, GATE_POLICY)
        yield made
        made.close()

    @pytest.mark.asyncio
    @pytest.mark.parametrize("method", ["list_rules", "get_request", "insert_parked_run"])
    async def test_a_store_failure_while_running_raises_and_runs_nothing(
        self,
        failing_queue: ReviewQueue,
        store: FailingStore,
        tickets: TicketStore,
        tmp_path: Path,
        db_url: str,
        method: str,
    ) -> None:
        driver = self.make_driver(failing_queue, tickets, tmp_path, db_url)
        store.fail(method)
        with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
            await driver.start(["t3"], run="run-store")
        assert tickets.delete_runs() == 0
        assert driver.tool_results("run-store") == [], "the model was told nothing about the call"
        store.heal()
        assert failing_queue.pending() == [] and failing_queue.parked_runs() == [], "no request without its parked run"

    @pytest.mark.asyncio
    @pytest.mark.parametrize("decision", DECISIONS, ids=["approve", "edit", "reject", "respond"])
    async def test_a_decision_that_cannot_be_marked_applied_runs_nothing_and_the_resume_can_be_retried(
        self,
        failing_queue: ReviewQueue,
        store: FailingStore,
        tickets: TicketStore,
        tmp_path: Path,
        db_url: str,
        decision: AnyDecision,
    ) -> None:
        queue = failing_queue
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        parked = await driver.start(["t3"], run="run-store")
        assert isinstance(parked, Parked)
        [request_id] = parked.request_ids
        queue.decide(request_id, decision, reviewer="ann")
        store.fail("update_request", applying)
        with pytest.raises(StoreError, match=r"unreachable \(update_request\)"):
            await driver.resume(parked.parked_run)
        assert tickets.delete_runs() == 0
        assert driver.tool_results("run-store") == [], "the model was told nothing about the call"
        failed = queue.get_parked(parked.parked_run)
        assert failed.status is ParkedRunStatus.FAILED
        assert queue.get(request_id).status is RequestStatus.DECIDED, "the reviewer's decision is not used up"

        store.heal()
        queue.retry_parked(parked.parked_run, actor="ops")
        done = await driver.resume(parked.parked_run)
        assert isinstance(done, Finished)
        assert queue.get(request_id).status is applied_status(decision.kind)
        [told] = driver.tool_results("run-store")
        if isinstance(decision, Approve):
            assert (tickets.delete_runs("t3"), told) == (1, "deleted ticket t3")
        elif isinstance(decision, Edit):
            assert (tickets.delete_runs("t2"), tickets.delete_runs("t3"), told) == (1, 0, "deleted ticket t2")
        else:
            assert tickets.delete_runs() == 0
            assert told == (REJECTION if isinstance(decision, Reject) else "t3 was archived by hand")

    @pytest.mark.asyncio
    async def test_any_crossgate_error_in_the_loop_ends_the_run_instead_of_reaching_the_model(
        self, tickets: TicketStore, tmp_path: Path
    ) -> None:
        """An SDK that turns a tool's exception into a tool result must not do so with crossgate's own errors."""
        url = f"sqlite:///{tmp_path / 'refusing.db'}"
        refusing = RefusingQueue(open_store(url), GATE_POLICY)
        driver = self.make_driver(refusing, tickets, tmp_path, url)
        try:
            with pytest.raises(ConfigurationError, match="refused the agent's credential"):
                await driver.start(["t3"], run="run-refused")
        finally:
            refusing.close()
        assert tickets.delete_runs() == 0
        assert driver.tool_results("run-refused") == [], "the model was told nothing about the call"

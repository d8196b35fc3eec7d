"""Fail closed when the store fails: at the policy's verdict, when parking, and when a decision is marked
applied. ``Gate.run``/``Gate.resume`` raise crossgate's ``StoreError``, the tool does not run, the model is
told nothing about the call, and a resume that failed can be retried once the store is back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands")

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
from crossgate_strands import Gate
from crossgate_strands.testing import planned_model, tool_results
from tests.adapters.strands.conftest import ASK_POLICY, REJECTION
from tests.adapters.strands.driver import delete_call, ticket_agent
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore
from tests.support.failing_store import FailingStore, applying


@pytest.fixture
def store(tmp_path: Path) -> FailingStore:
    return FailingStore(open_store(str(tmp_path / "crossgate.db")))


@pytest.fixture
def queue(store: FailingStore) -> Iterator[ReviewQueue]:
    made = ReviewQueue(store, ASK_POLICY)  # type: ignore[arg-type]
    yield made
    made.close()


@pytest.mark.parametrize("method", ["list_rules", "get_request", "insert_parked_run"])
async def test_a_store_failure_while_running_raises_and_runs_nothing(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, tmp_path: Path, method: str
) -> None:
    record = tmp_path / "in.jsonl"
    store.fail(method)
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await Gate(queue).run(ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record)), "go")
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [], "the model was told nothing about the call"
    store.heal()
    assert queue.pending() == [] and queue.parked_runs() == [], "no request without its parked run"


@pytest.mark.parametrize(
    "decision",
    [Approve(), Edit(args={"id": "t2"}), Reject(message=REJECTION), Respond(content="t3 was archived by hand")],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_a_decision_that_cannot_be_marked_applied_runs_nothing_and_the_resume_can_be_retried(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, tmp_path: Path, decision: AnyDecision
) -> None:
    record = tmp_path / "in.jsonl"
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record))
    parked = await Gate(queue).run(agent, "go", run="run-store")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    queue.decide(request_id, decision, reviewer="ann")
    store.fail("update_request", applying)
    with pytest.raises(StoreError, match=r"unreachable \(update_request\)"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [], "the model was told nothing about the call"
    failed = queue.get_parked(parked.parked_run)
    assert failed.status is ParkedRunStatus.FAILED
    assert queue.get(request_id).status is RequestStatus.DECIDED, "the reviewer's decision is not used up"

    store.heal()
    queue.retry_parked(parked.parked_run, actor="ops")
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert queue.get(request_id).status is applied_status(decision.kind)
    [told] = tool_results(record, TOOL)
    if isinstance(decision, Approve):
        assert (tickets.delete_runs("t3"), told) == (1, "deleted ticket t3")
    elif isinstance(decision, Edit):
        assert (tickets.delete_runs("t2"), tickets.delete_runs("t3"), told) == (1, 0, "deleted ticket t2")
    else:
        assert tickets.delete_runs() == 0
        assert told == (REJECTION if isinstance(decision, Reject) else "t3 was archived by hand")


async def test_any_crossgate_error_in_the_loop_ends_the_run_instead_of_reaching_the_model(
    tickets: TicketStore, tmp_path: Path
) -> None:
    """A crossgate error in the hook leaves Strands' tool executor and ends the run."""

    class Refusing(ReviewQueue):
        def prepare(self, *args: Any, **kwargs: Any) -> Any:
            raise ConfigurationError("the server refused the agent's credential")

    refusing = Refusing(open_store(str(tmp_path / "refusing.db")), ASK_POLICY)
    record = tmp_path / "in.jsonl"
    try:
        with pytest.raises(ConfigurationError, match="refused the agent's credential"):
            await Gate(refusing).run(ticket_agent(tickets, planned_model([[delete_call("t3")]], record=record)), "go")
    finally:
        refusing.close()
    assert tickets.delete_runs() == 0
    assert tool_results(record, TOOL) == [], "the model was told nothing about the call"

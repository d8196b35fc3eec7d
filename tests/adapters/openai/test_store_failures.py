"""Fail closed when the store fails (DESIGN.md invariant 1): at submission, while waiting or parking,
when decisions are read back on resume, and when a decision is marked applied.

Each case runs the SDK's real loop with a scripted model. The contract: ``Gate.run``/``Gate.resume`` raise
crossgate's ``StoreError`` (never the SDK's wrapper), the gated tool does not run, the model is never
told anything about the call, and a resume that failed can be retried once the store is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crossgate import (
    Approve,
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
from crossgate_openai import Gate
from tests.adapters.openai.conftest import ASK_POLICY, REJECTION
from tests.adapters.openai.scripted import PlannedModel, delete_call, outputs_by_call, ticket_agent, tool_results
from tests.adapters.openai.test_nested import as_tool_graph
from tests.conformance.tickets import TicketStore
from tests.support.failing_store import FailingStore, applying

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])


@pytest.fixture
def store(tmp_path: Path) -> FailingStore:
    return FailingStore(open_store(str(tmp_path / "crossgate.db")))


@pytest.fixture
def queue(store: FailingStore) -> Iterator[ReviewQueue]:
    made = ReviewQueue(store, ASK_POLICY)  # type: ignore[arg-type]
    yield made
    made.close()


def t3_agent(tickets: TicketStore) -> tuple[Any, PlannedModel]:
    model = PlannedModel([[delete_call("t3")]], final="Deleted the spam.")
    return ticket_agent(tickets, model), model


def nothing_ran(tickets: TicketStore, model: PlannedModel) -> None:
    assert tickets.delete_runs() == 0
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert tool_results(model.inputs) == [], "the model was told nothing about the call"


# running ------------------------------------------------------------------------------------------
@STREAM
@pytest.mark.parametrize(
    ("method", "wait"),
    [
        ("list_rules", 0.0),  # the policy's verdict (the tool's needs_approval check) cannot be read
        ("get_request", 0.0),  # submission looks up the call's request id
        ("insert_parked_run", 0.0),  # parking stores the requests with the run in one transaction
        ("insert_request", 0.5),  # with an inline wait the requests are stored before the wait
    ],
    ids=["evaluate", "submit", "park", "submit-before-wait"],
)
async def test_a_store_failure_while_running_raises_and_runs_nothing(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, method: str, wait: float, stream: bool
) -> None:
    store.fail(method)
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await Gate(queue).run(agent, "go", run="r", wait=wait, stream=stream)
    assert method in store.refused
    nothing_ran(tickets, model)
    store.heal()
    assert queue.list_requests().items == []
    assert queue.parked_runs() == []


async def test_a_store_failure_while_waiting_inline_raises_and_runs_nothing(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore
) -> None:
    # The request is stored; the wait for its decision cannot read it back.
    store.fail("get_request", lambda request_id: store.inner.get_request(request_id) is not None)
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match="unreachable"):
        await Gate(queue).run(agent, "go", run="r", wait=5.0)
    nothing_ran(tickets, model)
    store.heal()
    [request] = queue.list_requests().items
    assert request.status is RequestStatus.PENDING, "no decision was invented for it"
    assert queue.parked_runs() == []


async def test_a_store_that_fails_after_the_policy_allowed_a_call_runs_nothing(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore
) -> None:
    # needs_approval read the policy (allow); the gated tool's own check cannot record the call.
    queue.policy = ASK_POLICY.model_copy(update={"rules": ()})
    store.fail("enqueue_event")  # the allow is recorded without waiting for a commit, but not without a store
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match=r"unreachable \(enqueue_event\)"):
        await Gate(queue).run(agent, "go", run="r")
    nothing_ran(tickets, model)


# resuming -----------------------------------------------------------------------------------------
async def parked_t3(queue: ReviewQueue, tickets: TicketStore, decision: AnyDecision) -> Parked:
    agent, _ = t3_agent(tickets)
    parked = await Gate(queue).run(agent, "go", run="r")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], decision, reviewer="ann")
    return parked


DECISIONS = pytest.mark.parametrize(
    "decision",
    [Approve(), Edit(args={"id": "t2"}), Reject(message=REJECTION), Respond(content="t3 was archived by hand")],
    ids=["approve", "edit", "reject", "respond"],
)


@DECISIONS
async def test_decisions_that_cannot_be_read_back_leave_the_run_parked(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, decision: AnyDecision
) -> None:
    parked = await parked_t3(queue, tickets, decision)
    store.fail("get_request")
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match=r"unreachable \(get_request\)"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    nothing_ran(tickets, model)
    store.heal()
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED, "not used up"
    assert queue.get(parked.request_ids[0]).status is RequestStatus.DECIDED
    assert isinstance(await Gate(queue, sdk_agent=agent).resume(parked.parked_run), Finished)


@STREAM
@DECISIONS
async def test_a_decision_that_cannot_be_marked_applied_runs_nothing_and_the_resume_can_be_retried(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, decision: AnyDecision, stream: bool
) -> None:
    parked = await parked_t3(queue, tickets, decision)
    request_id = parked.request_ids[0]
    store.fail("update_request", applying)
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match=r"unreachable \(update_request\)"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)
    assert "update_request" in store.refused
    nothing_ran(tickets, model)
    failed = queue.get_parked(parked.parked_run)
    assert failed.status is ParkedRunStatus.FAILED
    assert "StoreError" in (failed.outcome or "")
    assert queue.get(request_id).status is RequestStatus.DECIDED, "the reviewer's decision is not used up"
    assert not [e for e in queue.events(request_id=request_id) if e.kind in ("ran", "not_run")]

    store.heal()
    queue.retry_parked(parked.parked_run, actor="ops")
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)
    assert isinstance(done, Finished)
    assert queue.get(request_id).status is applied_status(decision.kind)
    told = outputs_by_call(model.inputs)["call_t3"]
    if isinstance(decision, Approve):
        assert (tickets.delete_runs("t3"), told) == (1, "deleted ticket t3")
    elif isinstance(decision, Edit):
        assert (tickets.delete_runs("t2"), tickets.delete_runs("t3"), told) == (1, 0, "deleted ticket t2")
    else:
        assert tickets.delete_runs() == 0
        assert told == (REJECTION if isinstance(decision, Reject) else "t3 was archived by hand")


async def test_a_closed_sqlite_store_fails_the_resume_and_runs_nothing(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore
) -> None:
    parked = await parked_t3(queue, tickets, Approve())
    store.inner.close()
    agent, model = t3_agent(tickets)
    with pytest.raises(StoreError, match="is closed"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    nothing_ran(tickets, model)


@STREAM
async def test_a_store_failure_inside_a_nested_as_tool_run_fails_the_resume(
    queue: ReviewQueue, store: FailingStore, tickets: TicketStore, stream: bool
) -> None:
    # The SDK swallows the inner run's error and asks for the inner approval again; crossgate raises the
    # store error instead of answering that question a second time.
    manager, _, _ = as_tool_graph(tickets)
    parked = await Gate(queue).run(manager, "Clean up.", run="nested", stream=stream)
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    store.fail("update_request", applying)
    manager, outer, inner = as_tool_graph(tickets)
    with pytest.raises(StoreError, match=r"unreachable \(update_request\)"):
        await Gate(queue, sdk_agent=manager).resume(parked.parked_run, stream=stream)
    assert tickets.delete_runs() == 0
    assert (tool_results(inner.inputs), tool_results(outer.inputs, "clean_up")) == ([], [])
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.FAILED

    store.heal()
    queue.retry_parked(parked.parked_run)
    manager, outer, inner = as_tool_graph(tickets)
    assert isinstance(await Gate(queue, sdk_agent=manager).resume(parked.parked_run, stream=stream), Finished)
    assert tickets.delete_runs("t3") == 1
    assert tool_results(inner.inputs) == ["deleted ticket t3"]

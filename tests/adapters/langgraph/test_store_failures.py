"""Fail closed when the store fails (DESIGN.md invariant 1): at submission, while waiting or parking,
when decisions are read back on resume, and when a decision is marked applied.

Real graphs (a ``request_approval`` node) and real ``create_agent`` agents (crossgate's middleware) with
scripted models. The contract: ``Gate.run``/``Gate.resume`` raise crossgate's ``StoreError``, the gated
tool does not run, the model is told nothing about the call, and a failed resume keeps the reviewer's
decision unused, so it can be retried once the store is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from crossgate import (
    Approve,
    Edit,
    MemoryStore,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    StoreError,
)
from crossgate.decisions import AnyDecision
from crossgate.model import applied_status
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate
from tests.adapters.langgraph.test_agent import INPUT, told
from tests.adapters.langgraph.worlds import OPS_POLICY, READ, WRITE, OpsTools, ops_agent, ops_model, ticket_graph
from tests.conformance.tickets import TicketStore
from tests.support.failing_store import FailingStore, applying

MODES = pytest.mark.parametrize("mode", ["per_call", "batched"])
DECISIONS = pytest.mark.parametrize(
    "decision",
    [
        Approve(),
        Edit(args={"id": "t2"}),
        Reject(message="t3 is a real customer ticket; do not delete it."),
        Respond(content="t3 was archived by hand"),
    ],
    ids=["approve", "edit", "reject", "respond"],
)


@pytest.fixture
def store() -> FailingStore:
    return FailingStore(MemoryStore())


@pytest.fixture
def graph_queue(store: FailingStore) -> Iterator[ReviewQueue]:
    made = ReviewQueue(store)  # type: ignore[arg-type]  # every call asks
    yield made
    made.close()


@pytest.fixture
def agent_queue(store: FailingStore) -> Iterator[ReviewQueue]:
    made = ReviewQueue(store, OPS_POLICY)  # type: ignore[arg-type]
    yield made
    made.close()


def untouched(tickets: TicketStore) -> None:
    assert tickets.delete_runs() == 0
    assert tickets.ids() == ["t1", "t2", "t3"]


# graphs: request_approval -------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["list_rules", "insert_request"], ids=["evaluate", "submit"])
async def test_a_node_whose_call_cannot_be_submitted_raises_and_runs_nothing(
    graph_queue: ReviewQueue, store: FailingStore, tickets: TicketStore, method: str
) -> None:
    graph = ticket_graph(graph_queue, tickets, InMemorySaver(), [])
    store.fail(method)
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await Gate(graph_queue, graph).run(graph, {"ticket_id": "t3"}, thread="t")
    untouched(tickets)
    store.heal()
    assert graph_queue.list_requests().items == []
    assert graph_queue.parked_runs() == []


async def test_a_pause_that_cannot_be_parked_raises_and_can_be_parked_later(
    graph_queue: ReviewQueue, store: FailingStore, tickets: TicketStore
) -> None:
    graph = ticket_graph(graph_queue, tickets, InMemorySaver(), [])
    gate = Gate(graph_queue, graph)
    store.fail("insert_parked_run")
    with pytest.raises(StoreError, match=r"unreachable \(insert_parked_run\)"):
        await gate.run(graph, {"ticket_id": "t3"}, thread="t")
    untouched(tickets)
    store.heal()
    # The node stored its request before it paused: pending, nothing decided, and the thread can be parked.
    [request] = graph_queue.list_requests().items
    assert request.status is RequestStatus.PENDING
    parked = await gate.park(graph, thread="t")
    assert isinstance(parked, Parked) and parked.request_ids == (request.id,)
    graph_queue.decide(request.id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


async def test_a_store_failure_while_waiting_inline_raises_and_runs_nothing(
    graph_queue: ReviewQueue, store: FailingStore, tickets: TicketStore
) -> None:
    graph = ticket_graph(graph_queue, tickets, InMemorySaver(), [])
    store.fail("get_request", after="insert_parked_run")
    with pytest.raises(StoreError, match=r"unreachable \(get_request\)"):
        await Gate(graph_queue, graph).run(graph, {"ticket_id": "t3"}, thread="t", wait=5.0)
    untouched(tickets)
    store.heal()
    [parked] = graph_queue.parked_runs()
    assert parked.status is ParkedRunStatus.PARKED


async def parked_ticket(queue: ReviewQueue, tickets: TicketStore, decision: AnyDecision) -> tuple[Gate, Parked]:
    graph = ticket_graph(queue, tickets, InMemorySaver(), [])
    gate = Gate(queue, graph)
    parked = await gate.run(graph, {"ticket_id": "t3"}, thread="t")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], decision, reviewer="ann")
    return gate, parked


@DECISIONS
async def test_a_node_whose_decision_cannot_be_read_back_stays_parked(
    graph_queue: ReviewQueue, store: FailingStore, tickets: TicketStore, decision: AnyDecision
) -> None:
    gate, parked = await parked_ticket(graph_queue, tickets, decision)
    store.fail("get_request")
    with pytest.raises(StoreError, match=r"unreachable \(get_request\)"):
        await gate.resume(parked.parked_run)
    untouched(tickets)
    store.heal()
    assert graph_queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED, "not used up"
    assert isinstance(await gate.resume(parked.parked_run), Finished)


@DECISIONS
@pytest.mark.parametrize(
    ("method", "when"),
    [
        ("get_request", None),  # request_approval checks LangGraph's resume value against the queue
        ("update_request", applying),  # the decision is marked applied right before the tool
    ],
    ids=["check-answer", "mark-applied"],
)
async def test_a_node_whose_decision_cannot_be_checked_or_applied_fails_and_can_be_retried(
    graph_queue: ReviewQueue,
    store: FailingStore,
    tickets: TicketStore,
    decision: AnyDecision,
    method: str,
    when: Any,
) -> None:
    gate, parked = await parked_ticket(graph_queue, tickets, decision)
    request_id = parked.request_ids[0]
    store.fail(method, when or (lambda *a, **k: True), after="change_parked_run")
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await gate.resume(parked.parked_run)
    assert method in store.refused
    untouched(tickets)
    store.heal()
    failed = graph_queue.get_parked(parked.parked_run)
    assert failed.status is ParkedRunStatus.FAILED and "StoreError" in (failed.outcome or "")
    assert graph_queue.get(request_id).status is RequestStatus.DECIDED, "the decision is not used up"

    graph_queue.retry_parked(parked.parked_run)
    done = await gate.resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert graph_queue.get(request_id).status is applied_status(decision.kind)
    outcome = done.result["outcome"]
    if isinstance(decision, Approve):
        assert (tickets.delete_runs("t3"), outcome) == (1, "deleted ticket t3")
    elif isinstance(decision, Edit):
        assert (tickets.delete_runs("t2"), tickets.delete_runs("t3"), outcome) == (1, 0, "deleted ticket t2")
    else:
        assert tickets.delete_runs() == 0
        assert outcome in (f"rejected: {getattr(decision, 'message', '')}", "responded: t3 was archived by hand")


# LangChain agents: crossgate_middleware ------------------------------------------------------------
@MODES
@pytest.mark.parametrize(
    "method", ["list_rules", "get_request", "insert_parked_run"], ids=["evaluate", "submit", "park"]
)
async def test_an_agent_whose_calls_cannot_be_checked_or_parked_raises_and_runs_nothing(
    agent_queue: ReviewQueue, store: FailingStore, mode: str, method: str
) -> None:
    tools, model = OpsTools(), ops_model(WRITE, READ)
    agent = ops_agent(agent_queue, tools, model, InMemorySaver(), mode)
    store.fail(method)
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await Gate(agent_queue, agent).run(agent, INPUT, thread="t")
    if method == "insert_parked_run" and mode == "per_call":
        # The policy allowed the read while the store still answered; only the gated write waits.
        assert tools.names() == ["read_data"]
    else:
        assert tools.ran == [], "not even the allowed read ran without the store"
    assert "call_write" not in told(model)
    store.heal()
    assert agent_queue.list_requests().items == []
    assert agent_queue.parked_runs() == []


async def parked_agent(queue: ReviewQueue, mode: str, decision: AnyDecision) -> tuple[Gate, Parked, OpsTools, Any]:
    tools, model = OpsTools(), ops_model(WRITE)
    agent = ops_agent(queue, tools, model, InMemorySaver(), mode)
    gate = Gate(queue, agent)
    parked = await gate.run(agent, INPUT, thread="t")
    assert isinstance(parked, Parked)
    if isinstance(decision, Edit):
        decision = Edit(args={"path": "draft.txt", "content": "hello"})
    queue.decide(parked.request_ids[0], decision, reviewer="ann")
    return gate, parked, tools, model


@MODES
@DECISIONS
async def test_an_agent_whose_decision_cannot_be_read_back_stays_parked(
    agent_queue: ReviewQueue, store: FailingStore, mode: str, decision: AnyDecision
) -> None:
    gate, parked, tools, model = await parked_agent(agent_queue, mode, decision)
    seen = len(model.received)
    store.fail("get_request")
    with pytest.raises(StoreError, match=r"unreachable \(get_request\)"):
        await gate.resume(parked.parked_run)
    assert tools.ran == []
    assert len(model.received) == seen, "the model was not called again"
    store.heal()
    assert agent_queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED, "not used up"
    assert isinstance(await gate.resume(parked.parked_run), Finished)


@MODES
@DECISIONS
@pytest.mark.parametrize(
    ("method", "when"),
    [
        ("get_request", None),  # the middleware's when predicate and CrossgateGuard read the request
        ("update_request", applying),  # the decision is marked applied (before the tool, or for reject/respond)
    ],
    ids=["guard-read", "mark-applied"],
)
async def test_an_agent_whose_decision_cannot_be_checked_or_applied_fails_and_can_be_retried(
    agent_queue: ReviewQueue, store: FailingStore, mode: str, decision: AnyDecision, method: str, when: Any
) -> None:
    gate, parked, tools, model = await parked_agent(agent_queue, mode, decision)
    request_id = parked.request_ids[0]
    seen = len(model.received)
    store.fail(method, when or (lambda *a, **k: True), after="change_parked_run")
    with pytest.raises(StoreError, match=rf"unreachable \({method}\)"):
        await gate.resume(parked.parked_run)
    assert method in store.refused
    assert tools.ran == []
    assert len(model.received) == seen, "the model was told nothing about the call"
    store.heal()
    failed = agent_queue.get_parked(parked.parked_run)
    assert failed.status is ParkedRunStatus.FAILED and "StoreError" in (failed.outcome or "")
    assert agent_queue.get(request_id).status is RequestStatus.DECIDED, "the decision is not used up"

    agent_queue.retry_parked(parked.parked_run)
    # In batched mode LangGraph saved the answer in the model step before the tool step failed: the
    # retry goes on from that later checkpoint (it descends from the parked one) and runs the tool step.
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert agent_queue.get(request_id).status is applied_status(decision.kind)
    result = told(model)["call_write"]
    if isinstance(decision, Approve | Edit):
        path = "report.txt" if isinstance(decision, Approve) else "draft.txt"
        assert tools.ran == [("write_file", {"path": path, "content": "hello"})]
        assert str(result.content).endswith(f"wrote 5 bytes to {path}")
    else:
        assert tools.ran == []
        expected = decision.message if isinstance(decision, Reject) else decision.content
        assert str(result.content).endswith(expected)

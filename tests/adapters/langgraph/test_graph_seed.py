"""The seed's graph tests (seed 003), through crossgate: a node asks with request_approval()."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError

from crossgate import (
    Approve,
    ConflictError,
    Edit,
    InvalidDecisionError,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    fingerprint,
)
from crossgate.runs import Finished, Parked
from crossgate_langgraph import APPROVAL_INTERRUPT, DECISION_SCHEMA, Gate, resume_command
from tests.adapters.langgraph.worlds import ticket_graph
from tests.conformance.tickets import TicketStore

CFG = {"configurable": {"thread_id": "a"}}


async def park(
    queue: ReviewQueue, tickets: TicketStore, saver: Any, ticket: str = "t3"
) -> tuple[Any, Gate, Parked, list[str]]:
    entered: list[str] = []
    graph = ticket_graph(queue, tickets, saver, entered)
    gate = Gate(queue, graph)
    outcome = await gate.run(graph, {"ticket_id": ticket}, thread="a")
    assert isinstance(outcome, Parked)
    return graph, gate, outcome, entered


async def test_nothing_is_deleted_while_the_run_waits(queue, tickets, saver) -> None:
    graph, _, outcome, _ = await park(queue, tickets, saver)
    assert tickets.ids() == ["t1", "t2", "t3"]
    [pending] = (await graph.aget_state(CFG)).interrupts
    assert pending.value["type"] == APPROVAL_INTERRUPT
    assert pending.value["args"] == {"id": "t3"}
    assert pending.value["request_id"] == outcome.request_ids[0]
    assert pending.response_schema == DECISION_SCHEMA
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.PENDING
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.PARKED


async def test_a_rejection_keeps_the_ticket(queue, tickets, saver) -> None:
    _, gate, outcome, _ = await park(queue, tickets, saver)
    queue.decide(outcome.request_ids[0], Reject(message="keep it for the audit"), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert done.result["outcome"] == "rejected: keep it for the audit"
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert tickets.delete_runs() == 0
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.REJECTED


async def test_approve_deletes_exactly_the_reviewed_ticket(queue, tickets, saver) -> None:
    _, gate, outcome, _ = await park(queue, tickets, saver)
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1


async def test_edit_and_respond_reach_the_node_as_neutral_decisions(queue, tickets, saver) -> None:
    graph, gate, outcome, _ = await park(queue, tickets, saver)
    queue.decide(outcome.request_ids[0], Edit(args={"id": "t2"}), reviewer="ann")
    await gate.resume(outcome.parked_run)
    assert tickets.ids() == ["t1", "t3"]
    second = await gate.run(graph, {"ticket_id": "t3"}, thread="b")
    assert isinstance(second, Parked)
    queue.decide(second.request_ids[0], Respond(content="archived by hand"), reviewer="ann")
    done = await gate.resume(second.parked_run)
    assert isinstance(done, Finished)
    assert done.result["outcome"] == "responded: archived by hand"
    assert tickets.ids() == ["t1", "t3"]


@pytest.mark.parametrize("answer", ["yes", True, 1, {"approved": True}, {"kind": "approve"}])
async def test_only_a_valid_recorded_approve_approves(queue, tickets, saver, answer: Any) -> None:
    graph, gate, outcome, _ = await park(queue, tickets, saver)
    [pending] = (await graph.aget_state(CFG)).interrupts
    # Straight to LangGraph, past crossgate: the answer is refused before anything is saved.
    with pytest.raises(ValidationError) as refused:
        await graph.ainvoke(Command(resume={pending.id: answer}), CFG)
    assert is_invalid_resume(refused.value)
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert [i.id for i in (await graph.aget_state(CFG)).interrupts] == [pending.id]
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.ids() == ["t1", "t2"]


async def test_a_well_formed_approve_the_queue_never_recorded_approves_nothing(queue, tickets, saver) -> None:
    graph, _, outcome, _ = await park(queue, tickets, saver)
    [pending] = (await graph.aget_state(CFG)).interrupts
    forged = Approve(fingerprint=fingerprint("delete_ticket", {"id": "t3"})).model_dump(mode="json")
    with pytest.raises(ValidationError, match="still pending"):
        await graph.ainvoke(Command(resume={pending.id: forged}), CFG)
    assert tickets.delete_runs() == 0
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.PENDING


async def test_an_approval_covers_only_the_arguments_it_names(queue, tickets, saver) -> None:
    graph, gate, outcome, _ = await park(queue, tickets, saver)
    [pending] = (await graph.aget_state(CFG)).interrupts
    decided = queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    # An approval stamped for other arguments does not pass, even sent straight to LangGraph.
    other = decided.decision.model_copy(update={"fingerprint": fingerprint("delete_ticket", {"id": "t1"})})  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="other arguments"):
        await graph.ainvoke(Command(resume={pending.id: other.model_dump(mode="json")}), CFG)
    # The thread's state is swapped from t3 to t1 after the approval: the gate refuses, nothing is deleted.
    await graph.aupdate_state(CFG, {"ticket_id": "t1"})
    with pytest.raises(ConflictError, match="state was changed"):
        await gate.resume(outcome.parked_run)
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.FAILED
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.DECIDED
    # Running the thread on asks afresh about t1: the approval of t3 does not cover it.
    again = await gate.run(graph, None, thread="a")
    assert isinstance(again, Parked)
    assert queue.get(again.request_ids[0]).call.args == {"id": "t1"}
    assert queue.get(again.request_ids[0]).status is RequestStatus.PENDING
    assert tickets.ids() == ["t1", "t2", "t3"]


async def test_a_resume_sent_to_a_thread_that_never_started_approves_nothing(queue, tickets, saver) -> None:
    _, _, outcome, _ = await park(queue, tickets, saver)
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    empty = InMemorySaver()  # another checkpointer: the parked thread never started there
    elsewhere = ticket_graph(queue, tickets, empty, [])
    with pytest.raises(ConflictError, match="never started"):
        await Gate(queue, elsewhere).resume(outcome.parked_run)
    assert (await elsewhere.aget_state(CFG)).created_at is None
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.DECIDED
    with pytest.raises(InvalidDecisionError, match="not a pending interrupt id"):
        resume_command([], {"0" * 32: {"kind": "approve"}})


async def test_a_finished_thread_ignores_a_second_resume(queue, tickets, saver) -> None:
    graph, gate, outcome, entered = await park(queue, tickets, saver)
    [pending] = (await graph.aget_state(CFG)).interrupts
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    await gate.resume(outcome.parked_run)
    runs = len(entered)
    with pytest.raises(ParkedRunClaimedError):
        await gate.resume(outcome.parked_run)
    assert not (await graph.aget_state(CFG)).interrupts
    with pytest.raises(InvalidDecisionError):
        resume_command((await graph.aget_state(CFG)).interrupts, {pending.id: {"kind": "approve"}})
    assert len(entered) == runs
    assert tickets.delete_runs("t3") == 1


async def test_the_node_reruns_from_its_first_line_as_documented(queue, tickets, saver) -> None:
    graph, gate, outcome, entered = await park(queue, tickets, saver)
    assert len(entered) == 1  # the first run, up to the pause
    [pending] = (await graph.aget_state(CFG)).interrupts
    with pytest.raises(ValidationError):
        await graph.ainvoke(Command(resume={pending.id: "yes"}), CFG)
    assert len(entered) == 2  # an invalid answer re-ran the node, then was refused
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    await gate.resume(outcome.parked_run)
    assert len(entered) == 3  # the valid answer: the node once more, from its first line
    assert tickets.delete_runs("t3") == 1


async def test_a_node_that_runs_again_after_its_tool_ran_is_not_approved_twice(queue, tickets, saver) -> None:
    _graph, gate, outcome, _ = await park(queue, tickets, saver)
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    await gate.resume(outcome.parked_run)
    # Replaying the same answer in the same task (what a second interrupt in one node does) is refused.
    from crossgate_langgraph._approval import _Asking, _asking, _mark_applied

    request = queue.get(outcome.request_ids[0])
    token = _asking.set(_Asking(queue, request.id, request.fingerprint))
    try:
        again = _mark_applied(queue, request.id, request.call, request.decision)  # type: ignore[arg-type]
    finally:
        _asking.reset(token)
    assert isinstance(again, Reject)  # not run again: the node is told the call was applied before
    assert "was applied before" in again.message
    assert tickets.delete_runs("t3") == 1


async def test_policy_allow_and_deny_do_not_pause(tickets, saver) -> None:
    from crossgate import MemoryStore, Policy, PolicyRule, VerdictKind

    rules = (
        PolicyRule(
            name="t2-ok",
            verdict=VerdictKind.ALLOW,
            tool="delete_ticket",
            where=({"arg": "id", "kind": "equals", "value": "t2"},),
        ),
        PolicyRule(
            name="t1-never",
            verdict=VerdictKind.DENY,
            tool="delete_ticket",
            where=({"arg": "id", "kind": "equals", "value": "t1"},),
            reason="t1 is protected",
        ),
    )
    queue = ReviewQueue(MemoryStore(), Policy(rules=rules))
    graph = ticket_graph(queue, tickets, saver, [])
    gate = Gate(queue, graph)
    allowed = await gate.run(graph, {"ticket_id": "t2"}, thread="allow")
    denied = await gate.run(graph, {"ticket_id": "t1"}, thread="deny")
    assert isinstance(allowed, Finished) and isinstance(denied, Finished)
    assert denied.result["outcome"] == "rejected: t1 is protected"
    assert tickets.ids() == ["t1", "t3"]
    assert queue.pending() == []


async def test_run_with_wait_resumes_in_place_when_the_decision_arrives(queue, tickets, saver) -> None:
    entered: list[str] = []
    graph = ticket_graph(queue, tickets, saver, entered)

    async def reviewer() -> None:
        while not queue.pending():  # noqa: ASYNC110 - the queue offers no "submitted" wake-up
            await asyncio.sleep(0.01)
        queue.decide(queue.pending()[0].id, Approve(), reviewer="ann")

    decided = asyncio.create_task(reviewer())
    done = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread="inline", wait=5.0)
    await decided
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert len(entered) == 2


async def test_run_with_wait_parks_when_nobody_decides_in_time(queue, tickets, saver) -> None:
    graph = ticket_graph(queue, tickets, saver, [])
    outcome = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread="slow", wait=0.05)
    assert isinstance(outcome, Parked)
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.ids() == ["t1", "t2", "t3"]

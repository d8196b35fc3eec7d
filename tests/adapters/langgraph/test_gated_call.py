"""``gated_call``: the node's tool runs inside crossgate's ask, and what it did is recorded, for every decision."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from crossgate import Approve, Edit, MemoryStore, Policy, PolicyRule, Reject, Respond, ReviewQueue, VerdictKind
from crossgate.authority import Authority
from crossgate.model import Decision
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, gated_call


@pytest.fixture
def queue() -> Iterator[ReviewQueue]:
    """A queue that signs its decisions; the gate verifies them with its key."""
    made = ReviewQueue(MemoryStore(), authority=Authority.generate())
    yield made
    made.close()


class State(TypedDict, total=False):
    ticket_id: str
    outcome: str


def graph_of(queue: ReviewQueue, ran: list[str], *, fail: bool = False) -> Any:
    def delete(args: dict[str, Any]) -> str:
        if fail:
            raise RuntimeError("the ticket system is down")
        ran.append(args["id"])
        return f"deleted {args['id']}"

    def node(state: State) -> State:
        return {"outcome": str(gated_call(queue, "delete_ticket", {"id": state["ticket_id"]}, delete).reply)}

    builder = StateGraph(State)
    builder.add_node("delete_ticket", node)
    builder.add_edge(START, "delete_ticket")
    builder.add_edge("delete_ticket", END)
    return builder.compile(checkpointer=InMemorySaver(), name="tickets")


async def decided(queue: ReviewQueue, decision: Decision, *, fail: bool = False) -> tuple[Any, list[str], str]:
    ran: list[str] = []
    graph = graph_of(queue, ran, fail=fail)
    gate = Gate(queue, graph)
    parked = await gate.run(graph, {"ticket_id": "t3"}, thread="a")
    assert isinstance(parked, Parked) and ran == []
    [request_id] = parked.request_ids
    queue.decide(request_id, decision, reviewer="ann")
    try:
        done = await gate.resume(parked.parked_run)
    except RuntimeError:
        return None, ran, request_id
    assert isinstance(done, Finished)
    return done.result["outcome"], ran, request_id


@pytest.mark.parametrize(
    ("decision", "reply", "ran", "kind"),
    [
        (Approve(), "deleted t3", ["t3"], "ran"),
        (Edit(args={"id": "t2"}), "deleted t2", ["t2"], "ran"),
        (Reject(message="keep it"), "keep it", [], "not_run"),
        (Respond(content="t3 is already gone"), "t3 is already gone", [], "not_run"),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_each_decision_runs_what_it_says_and_records_it(
    queue: ReviewQueue, decision: Decision, reply: str, ran: list[str], kind: str
) -> None:
    outcome, calls, request_id = await decided(queue, decision)
    assert (outcome, calls) == (reply, ran)
    recorded = queue.outcome(request_id)
    assert recorded is not None and recorded.kind == kind
    if kind == "ran":
        assert recorded.payload["result"] == reply


async def test_a_tool_that_fails_is_recorded_as_ran_with_its_error(queue: ReviewQueue) -> None:
    _, calls, request_id = await decided(queue, Approve(), fail=True)
    recorded = queue.outcome(request_id)
    assert calls == [] and recorded is not None and recorded.kind == "ran"
    assert recorded.payload["error"] == "RuntimeError: the ticket system is down"


async def test_a_policy_allow_runs_at_once_and_records_the_call() -> None:
    allow = Policy(rules=(PolicyRule(name="ok", verdict=VerdictKind.ALLOW, tool="delete_ticket"),))
    queue = ReviewQueue(MemoryStore(), allow, authority=Authority.generate())
    ran: list[str] = []
    graph = graph_of(queue, ran)
    done = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread="a")
    assert isinstance(done, Finished) and ran == ["t3"]
    events = [e for e in queue.events() if e.kind == "ran"]
    assert [e.payload["tool"] for e in events] == ["delete_ticket"]
    queue.close()

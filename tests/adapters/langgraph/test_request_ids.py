"""``request_approval``'s request ids: one per task position, never LangGraph's task id.

The id is the kit's recipe over the thread, the node, its step and its place in the step
(``crossgate_langgraph._approval.task_position``): a re-run of the same task finds the same request (see
``tests/chaos/test_request_ids.py`` for the crash), and every other ask gets its own.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Send

from crossgate import Approve, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, request_approval
from tests.adapters.langgraph.worlds import ticket_graph
from tests.conformance.tickets import TicketStore


class FanState(TypedDict, total=False):
    ids: list[str]
    id: str
    done: Annotated[list[str], operator.add]


def fan_graph(queue: ReviewQueue, tickets: TicketStore, saver: Any) -> Any:
    """Two ``Send``s of one asking node in one step, each deleting its own ticket."""

    def delete(state: FanState) -> FanState:
        decision = request_approval(queue, "delete_ticket", {"id": state["id"]})
        return {"done": [tickets.delete(state["id"]) if isinstance(decision, Approve) else "kept"]}

    builder = StateGraph(FanState)
    builder.add_node("delete", delete)
    builder.add_conditional_edges(START, lambda s: [Send("delete", {"id": i}) for i in s["ids"]], ["delete"])
    return builder.compile(checkpointer=saver, name="fan")


async def test_two_sends_of_one_node_in_one_step_ask_under_their_own_ids(queue, tickets, saver) -> None:
    graph = fan_graph(queue, tickets, saver)
    parked = await Gate(queue, graph).run(graph, {"ids": ["t1", "t2"]}, thread="fan")
    assert isinstance(parked, Parked)
    assert len(set(parked.request_ids)) == 2
    assert sorted(queue.get(r).call.args["id"] for r in parked.request_ids) == ["t1", "t2"]
    for request_id in parked.request_ids:
        queue.decide(request_id, Approve(), reviewer="ann")
    done = await Gate(queue, graph).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t1") == tickets.delete_runs("t2") == 1


async def test_a_later_run_on_the_thread_asks_anew(queue, tickets, saver) -> None:
    graph = ticket_graph(queue, tickets, saver, [])
    first = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread="again")
    assert isinstance(first, Parked)
    queue.decide(first.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await Gate(queue, graph).resume(first.parked_run), Finished)

    second = await Gate(queue, graph).run(graph, {"ticket_id": "t3"}, thread="again")  # the same call, a new step
    assert isinstance(second, Parked)
    assert second.request_ids != first.request_ids
    assert queue.get(second.request_ids[0]).is_open
    assert tickets.delete_runs("t3") == 1  # the first approval did not carry over

"""A hand-built graph: model node, then ``ToolNode`` with crossgate's tool wrapper, one task per call."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from crossgate import Approve, Edit, Reject, Respond, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, gated_tool_wrapper, tool_calls_router
from crossgate_langgraph.testing import ScriptedChatModel
from tests.adapters.langgraph.worlds import READ, SQL, WRITE, OpsTools

CFG = {"configurable": {"thread_id": "g"}}


def build(queue: ReviewQueue, tools: OpsTools, model: ScriptedChatModel, saver: Any, *, router: bool = True) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools.tools(), wrap_tool_call=gated_tool_wrapper(queue)))
    builder.add_edge(START, "model")
    if router:
        builder.add_conditional_edges("model", tool_calls_router("tools"), ["tools", END])
    else:
        builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver, name="hand-built")


async def start(
    queue: ReviewQueue, saver: Any, *calls: dict[str, Any], router: bool = True
) -> tuple[Any, Gate, Parked, OpsTools, ScriptedChatModel]:
    tools = OpsTools()
    model = ScriptedChatModel(turns=[AIMessage(content="", tool_calls=list(calls))])
    graph = build(queue, tools, model, saver, router=router)
    gate = Gate(queue, graph)
    outcome = await gate.run(graph, {"messages": [("user", "go")]}, thread="g")
    assert isinstance(outcome, Parked)
    return graph, gate, outcome, tools, model


def told(model: ScriptedChatModel) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in model.received[-1] if isinstance(m, ToolMessage)}


async def test_parallel_calls_pause_separately_and_are_answered_one_at_a_time(queue, saver) -> None:
    graph, gate, outcome, tools, model = await start(queue, saver, WRITE, SQL, READ)
    requests = {queue.get(r).call.tool: r for r in outcome.request_ids}
    assert sorted(requests) == ["execute_sql", "read_data", "write_file"]
    assert len((await graph.aget_state(CFG)).interrupts) == 3
    queue.decide(requests["write_file"], Edit(args={"path": "b.txt", "content": "x"}), reviewer="ann")
    step = await gate.resume(outcome.parked_run, partial=True)
    assert isinstance(step, Parked)
    assert sorted(step.request_ids) == sorted([requests["execute_sql"], requests["read_data"]])
    assert tools.ran == [("write_file", {"path": "b.txt", "content": "x"})]
    queue.decide(requests["execute_sql"], Reject(message="No deletes today."), reviewer="ann")
    queue.decide(requests["read_data"], Respond(content="rows: none"), reviewer="ann")
    done = await gate.resume(step.parked_run)
    assert isinstance(done, Finished)
    assert tools.names() == ["write_file"]  # ran once, not again when its siblings resumed
    messages = told(model)
    assert messages["call_write"].content == "wrote 1 bytes to b.txt"
    assert messages["call_sql"].content == "No deletes today."
    assert messages["call_sql"].status == "error"
    assert messages["call_read"].content == "rows: none"


async def test_parallel_calls_answered_all_at_once(queue, saver) -> None:
    _, gate, outcome, tools, _ = await start(queue, saver, WRITE, SQL)
    for request_id in outcome.request_ids:
        queue.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert sorted(tools.names()) == ["execute_sql", "write_file"]


async def test_several_gated_calls_in_one_task_never_run_a_tool_twice(queue, saver) -> None:
    _, gate, outcome, tools, model = await start(queue, saver, WRITE, SQL, router=False)
    [first] = outcome.request_ids  # one task: the first interrupt stops the others
    queue.decide(first, Approve(), reviewer="ann")
    second = await gate.resume(outcome.parked_run)
    assert isinstance(second, Parked)
    queue.decide(second.request_ids[0], Approve(), reviewer="ann")
    # The task re-runs the first call too: its decision was applied already, so it is not run again and
    # the model is told what happened the first time.
    assert isinstance(await gate.resume(second.parked_run), Finished)
    assert tools.names().count("write_file") == 1
    assert "already ran for this call" in str(told(model)["call_write"].content)

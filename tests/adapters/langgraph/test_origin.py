"""Who and where a call comes from reaches every path (issue 11, class 3).

An agent-scoped deny holds without ``agent=`` (the agent is named from the SDK's own names: the graph's
``name``, ``create_agent(name=...)``), and a deny on ``context.tenant`` holds on every path that takes
app context: ``gated_tool_wrapper(context=)``, ``crossgate_middleware(context=)``, ``Gate.run(context=)``
and ``request_approval(context=)``. Real ``ToolNode`` graphs, real ``create_agent`` agents and a real
``request_approval`` node, with scripted models.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from crossgate import (
    Approve,
    MemoryStore,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware, gated_tool_wrapper, request_approval
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from tests.adapters.langgraph.test_coerced_args import TOOL, Refunds, build

ARGS = {"customer": "c1", "amount": 5}
AGENT_DENY = PolicyRule(
    name="no-refunds-here",
    verdict=VerdictKind.DENY,
    tool=TOOL,
    agents=("refunds-agent", "refunds-graph", "refund-node"),
    reason="This agent may not refund.",
)
TENANT_DENY = PolicyRule(
    name="acme-frozen",
    verdict=VerdictKind.DENY,
    tool=TOOL,
    context=({"arg": "tenant", "kind": "equals", "value": "acme"},),
    reason="Refunds for acme are frozen.",
)


def scripted() -> ScriptedChatModel:
    return ScriptedChatModel(turns=[AIMessage(content="", tool_calls=[tool_call(TOOL, ARGS, "call_r")])])


def told(model: ScriptedChatModel) -> str:
    [message] = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
    return str(message.content)


class NodeState(TypedDict, total=False):
    outcome: str


def node_graph(queue: ReviewQueue, refunds: Refunds, saver: Any, context: dict[str, Any] | None = None) -> Any:
    def refund(state: NodeState) -> NodeState:
        decision = request_approval(queue, TOOL, ARGS, context=context)
        if isinstance(decision, Reject):
            return {"outcome": decision.message}
        refunds.ran.append(ARGS)
        return {"outcome": "refunded"}

    builder = StateGraph(NodeState)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=saver, name="refund-node")


@pytest.mark.parametrize("kind", ["toolnode", "create_agent"])
async def test_an_agent_scoped_deny_holds_without_naming_the_agent(saver, kind: str) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(AGENT_DENY,), default=VerdictKind.ALLOW))
    refunds, model = Refunds(), scripted()
    graph = build(kind, queue, refunds.tool(), model, saver)
    done = await Gate(queue, graph).run(graph, {"messages": [("user", "refund")]}, thread="t")
    assert isinstance(done, Finished)
    assert refunds.ran == []
    assert "This agent may not refund." in told(model)
    [denied] = [e for e in queue.events() if e.kind == "auto_denied"]
    assert denied.payload["agent"] == graph.name


async def test_create_agent_is_named_from_its_own_name_even_outside_a_gate(saver) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(AGENT_DENY,), default=VerdictKind.ALLOW))
    refunds, model = Refunds(), scripted()
    tool = refunds.tool()
    agent = create_agent(
        model, [tool], middleware=crossgate_middleware(queue, [tool]), checkpointer=saver, name="refunds-agent"
    )
    await agent.ainvoke({"messages": [("user", "refund")]}, {"configurable": {"thread_id": "direct"}})
    assert refunds.ran == []
    assert "This agent may not refund." in told(model)


async def test_a_request_approval_node_is_named_after_its_graph(saver) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(AGENT_DENY,), default=VerdictKind.ALLOW))
    refunds = Refunds()
    graph = node_graph(queue, refunds, saver)
    done = await Gate(queue, graph).run(graph, {}, thread="n")
    assert isinstance(done, Finished)
    assert done.result["outcome"] == "This agent may not refund."
    assert refunds.ran == []


async def test_an_agent_only_standing_rule_matches_the_named_agent(saver) -> None:
    queue = ReviewQueue(MemoryStore(), Policy())  # everything asks
    refunds, model = Refunds(), scripted()
    graph = build("create_agent", queue, refunds.tool(), model, saver)
    gate = Gate(queue, graph)
    parked = await gate.run(graph, {"messages": [("user", "refund")]}, thread="first")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    assert queue.get(request_id).call.agent == "refunds-agent"
    remember = Remember(scope=RememberScope.FOREVER, match=RememberMatch.TOOL, this_agent_only=True)
    queue.decide(request_id, Approve(remember=remember), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    again = await gate.run(graph, {"messages": [("user", "refund")]}, thread="second")
    assert isinstance(again, Finished), "the agent's own standing rule allowed the second call"
    assert len(refunds.ran) == 2


@pytest.mark.parametrize("path", ["wrapper", "middleware"])
async def test_a_tenant_deny_holds_for_context_given_to_the_path(saver, path: str) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(TENANT_DENY,), default=VerdictKind.ALLOW))
    refunds, model = Refunds(), scripted()
    tool = refunds.tool()
    acme = {"tenant": "acme"}
    if path == "middleware":
        middleware = crossgate_middleware(queue, [tool], context=acme)
        graph = create_agent(model, [tool], middleware=middleware, checkpointer=saver, name="refunds-agent")
    else:
        from langgraph.graph import MessagesState

        from crossgate_langgraph import tool_calls_router

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", ToolNode([tool], wrap_tool_call=gated_tool_wrapper(queue, context=acme)))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", tool_calls_router("tools"), ["tools", END])
        builder.add_edge("tools", "model")
        graph = builder.compile(checkpointer=saver, name="refunds-graph")
    done = await Gate(queue, graph).run(graph, {"messages": [("user", "refund")]}, thread="acme-1")
    assert isinstance(done, Finished)
    assert refunds.ran == []
    assert "Refunds for acme are frozen." in told(model)


@pytest.mark.parametrize("kind", ["toolnode", "create_agent", "node"])
async def test_a_tenant_deny_holds_for_context_given_to_the_run(saver, kind: str) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(TENANT_DENY,), default=VerdictKind.ALLOW))
    refunds, model = Refunds(), scripted()
    if kind == "node":
        graph, start = node_graph(queue, refunds, saver), {}
    else:
        graph, start = build(kind, queue, refunds.tool(), model, saver), {"messages": [("user", "refund")]}
    gate = Gate(queue, graph)
    done = await gate.run(graph, start, thread="acme", call_context={"tenant": "acme"})
    assert isinstance(done, Finished)
    assert refunds.ran == []
    if kind == "node":
        assert done.result["outcome"] == "Refunds for acme are frozen."
    else:
        assert "Refunds for acme are frozen." in told(model)
    other = await gate.run(graph, start, thread="globex", call_context={"tenant": "globex"})
    assert isinstance(other, Finished)
    assert refunds.ran == [ARGS], "another tenant's refund runs"


async def test_request_approval_takes_context(saver) -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(TENANT_DENY,), default=VerdictKind.ALLOW))
    refunds = Refunds()
    graph = node_graph(queue, refunds, saver, context={"tenant": "acme"})
    done = await Gate(queue, graph).run(graph, {}, thread="n")
    assert isinstance(done, Finished) and refunds.ran == []


@pytest.mark.parametrize("kind", ["toolnode", "create_agent", "node"])
async def test_the_runs_context_is_parked_and_restored_on_resume(saver, kind: str) -> None:
    ask = PolicyRule(name="ask", verdict=VerdictKind.ASK, tool=TOOL)
    queue = ReviewQueue(MemoryStore(), Policy(rules=(ask,)))
    refunds, model = Refunds(), scripted()
    if kind == "node":
        graph, start = node_graph(queue, refunds, saver), {}
    else:
        graph, start = build(kind, queue, refunds.tool(), model, saver), {"messages": [("user", "refund")]}
    parked = await Gate(queue, graph).run(graph, start, thread="ctx", call_context={"tenant": "acme"})
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    request = queue.get(request_id)
    assert request.call.context["tenant"] == "acme"
    assert request.call.agent == graph.name
    assert queue.get_parked(parked.parked_run).metadata["context"] == {"tenant": "acme"}
    # While parked, a rule freezes acme: the resume (which takes no context) restores it, and the
    # late check in the process about to run the tool denies the call.
    queue.decide(request_id, Approve(), reviewer="ann")
    queue.policy = Policy(rules=(TENANT_DENY, ask))
    assert isinstance(await Gate(queue, graph).resume(parked.parked_run), Finished)
    assert refunds.ran == []


async def test_context_given_twice_with_two_values_is_refused(saver) -> None:
    from crossgate import ConfigurationError

    queue = ReviewQueue(MemoryStore(), Policy(default=VerdictKind.ALLOW))
    refunds = Refunds()
    graph = node_graph(queue, refunds, saver, context={"tenant": "globex"})
    with pytest.raises(ConfigurationError, match="one context"):
        await Gate(queue, graph).run(graph, {}, thread="n", call_context={"tenant": "acme"})
    assert refunds.ran == []


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_the_middlewares_own_context_and_agent_reach_the_gates_requests(saver, mode: str) -> None:
    ask = PolicyRule(
        name="acme-asks",
        verdict=VerdictKind.ASK,
        tool=TOOL,
        context=({"arg": "tenant", "kind": "equals", "value": "acme"},),
    )
    queue = ReviewQueue(MemoryStore(), Policy(rules=(ask,), default=VerdictKind.DENY))
    refunds, model = Refunds(), scripted()
    tool = refunds.tool()
    middleware = crossgate_middleware(
        queue,
        [tool],
        context={"tenant": "acme"},
        agent="refunder",
        interrupt_mode=mode,  # type: ignore[arg-type]
    )
    graph = create_agent(model, [tool], middleware=middleware, checkpointer=saver, name="refunds-agent")
    gate = Gate(queue, graph, agent="refunder")
    parked = await gate.run(graph, {"messages": [("user", "refund")]}, thread=f"mw-{mode}")
    assert isinstance(parked, Parked), "the middleware's context made the call ask, and the gate agreed"
    [request_id] = parked.request_ids
    request = queue.get(request_id)
    assert request.call.context["tenant"] == "acme"
    assert request.call.agent == "refunder"
    queue.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert refunds.ran == [ARGS]

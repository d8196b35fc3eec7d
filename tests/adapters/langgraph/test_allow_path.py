"""The allow path of ``crossgate_middleware``: the guard acts on what ``when`` judged, and judges nothing twice."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

import crossgate_langgraph._middleware as middleware
from crossgate import ReviewQueue
from crossgate_langgraph.testing import ScriptedChatModel
from tests.adapters.langgraph.worlds import DROP, READ, OpsTools, ops_agent

INPUT = {"messages": [("user", "Read the users, then drop the table.")]}


class Counted:
    """Counts policy evaluations, request reads, argument checks and edit schemas built."""

    def __init__(self, queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = {"evaluate": 0, "read": 0, "check": 0, "schema": 0}
        self._count(monkeypatch, queue, "evaluate", "evaluate")
        self._count(monkeypatch, queue.store, "get_request", "read")
        self._count(monkeypatch, middleware, "tool_args", "check")
        self._count(monkeypatch, middleware, "args_json_schema", "schema")

    def _count(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
async def test_an_allowed_and_a_denied_call_are_each_judged_once(
    ops_queue: ReviewQueue, saver: Any, monkeypatch: pytest.MonkeyPatch, sync: bool
) -> None:
    tools = OpsTools()
    model = ScriptedChatModel(
        turns=[AIMessage(content="", tool_calls=[READ]), AIMessage(content="", tool_calls=[DROP])]
    )
    agent = ops_agent(ops_queue, tools, model, saver, "per_call")
    counted = Counted(ops_queue, monkeypatch)
    config = {"configurable": {"thread_id": f"allowed-{sync}"}}
    result = agent.invoke(INPUT, config) if sync else await agent.ainvoke(INPUT, config)
    assert tools.names() == ["read_data"]
    replies = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in replies] == ["success", "error"]
    assert "Dropping tables is forbidden" in str(replies[1].content)
    # One evaluation and one argument check per call; one read of the turn's request id (a turn that
    # paused must get the same answer on resume), none by the guard; no edit schema for calls nobody reviews.
    assert counted.counts == {"evaluate": 2, "read": 2, "check": 2, "schema": 0}
    assert [e.kind for e in ops_queue.events()] == ["auto_allowed", "auto_denied"]
    assert ops_queue.verify_audit().ok


def test_per_call_mode_installs_one_tool_call_hook(ops_queue: ReviewQueue) -> None:
    # LangChain wraps every tool-call hook in a trace span (two thread hops per async call, tracing off
    # or not): the review's pause runs in the guard's hook, so the pair adds one layer, not two.
    from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware

    def hooked(found: list[AgentMiddleware[Any, Any]]) -> list[str]:
        return [
            type(m).__name__
            for m in found
            if type(m).wrap_tool_call is not AgentMiddleware.wrap_tool_call
            or type(m).awrap_tool_call is not AgentMiddleware.awrap_tool_call
        ]

    tools = OpsTools().tools()
    review, guard = middleware.crossgate_middleware(ops_queue, tools)
    assert hooked([review, guard]) == ["CrossgateGuard"]
    assert type(review).after_model is AgentMiddleware.after_model  # and no graph step per model turn
    batched = middleware.crossgate_middleware(ops_queue, tools, interrupt_mode="batched")
    assert hooked(batched) == ["CrossgateGuard"]
    assert type(batched[0]).after_model is HumanInTheLoopMiddleware.after_model  # the batched pause stays
    # A review that keeps its own hook would run twice (two pauses for one call): refused.
    with pytest.raises(ValueError, match="without a tool-call hook"):
        middleware.CrossgateGuard(ops_queue, review=HumanInTheLoopMiddleware({}, interrupt_mode="per_call"))


@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
async def test_the_guard_alone_still_denies_and_runs_allowed_calls(
    ops_queue: ReviewQueue, saver: Any, sync: bool
) -> None:
    from langchain.agents import create_agent

    tools = OpsTools()
    built = tools.tools()
    model = ScriptedChatModel(
        turns=[AIMessage(content="", tool_calls=[READ]), AIMessage(content="", tool_calls=[DROP])]
    )
    agent: Any = create_agent(model, built, middleware=[middleware.CrossgateGuard(ops_queue)], checkpointer=saver)
    config = {"configurable": {"thread_id": f"guard-alone-{sync}"}}
    result = agent.invoke(INPUT, config) if sync else await agent.ainvoke(INPUT, config)
    assert tools.names() == ["read_data"]
    replies = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in replies] == ["success", "error"]
    assert "Dropping tables is forbidden" in str(replies[1].content)


def test_turn_of_finds_the_latest_model_message_carrying_the_call() -> None:
    from langchain_core.messages import HumanMessage

    from crossgate import AdapterError
    from crossgate_langgraph._calls import turn_of

    def turn(*ids: str) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": "read_data", "args": {}, "id": i} for i in ids])

    first, second, third = turn("a", "b"), turn("c"), turn("a")  # a model that reuses call ids
    messages = [HumanMessage("hi"), first, ToolMessage("x", tool_call_id="a"), second, third]
    assert turn_of(messages, "a") == (3, third)  # the latest turn carrying it, never an earlier one
    assert turn_of(messages, "b") == (1, first)
    assert turn_of(messages, "c") == (2, second)
    with pytest.raises(AdapterError, match="no model message"):
        turn_of(messages, "z")

"""Compiling the policy into HumanInTheLoopMiddleware: pure predicates, decisions and descriptions from the rules."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import AIMessage

from crossgate import DecisionKind, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate_langgraph import CrossgateGuard, crossgate_middleware
from crossgate_langgraph._middleware import possible_decisions
from tests.adapters.langgraph.worlds import DROP, OPS_POLICY, READ, SQL, WRITE, OpsTools


def request_for(call: dict[str, Any], thread: str = "t") -> ToolCallRequest:
    state = {"messages": [AIMessage(content="", tool_calls=[call])]}
    runtime = SimpleNamespace(config={"configurable": {"thread_id": thread}})
    return ToolCallRequest(tool_call=call, tool=None, state=state, runtime=runtime)  # type: ignore[arg-type]


def test_the_middlewares_come_in_order_and_cover_every_tool(ops_queue) -> None:
    tools = OpsTools().tools()
    hitl, guard = crossgate_middleware(ops_queue, tools)
    assert isinstance(hitl, HumanInTheLoopMiddleware)
    assert isinstance(guard, CrossgateGuard)
    assert hitl.interrupt_mode == "per_call"
    assert sorted(hitl.interrupt_on) == ["execute_sql", "read_data", "write_file"]
    assert hitl.interrupt_on["execute_sql"]["allowed_decisions"] == ["approve", "reject"]
    assert hitl.interrupt_on["write_file"]["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
    [batched, _] = crossgate_middleware(ops_queue, tools, interrupt_mode="batched")
    assert batched.interrupt_mode == "batched"  # type: ignore[attr-defined]


def test_when_asks_exactly_for_ask_verdicts_and_records_nothing(ops_queue) -> None:
    hitl, _ = crossgate_middleware(ops_queue, OpsTools().tools())
    before = len(ops_queue.events())
    answers = {}
    for call in (WRITE, SQL, READ, DROP):
        when = hitl.interrupt_on[call["name"]]["when"]
        answers[call["id"]] = [when(request_for(call)) for _ in range(3)]
    assert answers == {
        "call_write": [True] * 3,
        "call_sql": [True] * 3,
        "call_read": [False] * 3,  # allow: runs
        "call_drop": [False] * 3,  # deny: not paused; CrossgateGuard answers with the reason
    }
    assert len(ops_queue.events()) == before


def test_descriptions_come_from_the_rule(ops_queue) -> None:
    hitl, _ = crossgate_middleware(ops_queue, OpsTools().tools())
    describe = hitl.interrupt_on["execute_sql"]["description"]
    assert describe(SQL, {}, None) == "SQL statements need DBA approval"  # type: ignore[operator]


def test_possible_decisions_cover_every_ask_rule_and_a_reachable_default() -> None:
    narrow = PolicyRule(
        name="narrow",
        verdict=VerdictKind.ASK,
        tool="execute_sql",
        where=({"arg": "query", "kind": "regex", "pattern": "DELETE"},),
        allowed_decisions=(DecisionKind.APPROVE, DecisionKind.REJECT),
    )
    everything = DecisionKind.APPROVE, DecisionKind.EDIT, DecisionKind.REJECT, DecisionKind.RESPOND
    # Other SQL falls to the default (ask, all decisions), so the tool may be asked with any of them.
    assert possible_decisions(Policy(rules=(narrow,)), "execute_sql") == everything
    assert possible_decisions(OPS_POLICY, "execute_sql") == (DecisionKind.APPROVE, DecisionKind.REJECT)
    assert possible_decisions(Policy(rules=(narrow,), default=VerdictKind.ALLOW), "execute_sql") == (
        DecisionKind.APPROVE,
        DecisionKind.REJECT,
    )


def test_same_policy_same_verdict_for_graph_and_agent_calls() -> None:
    queue = ReviewQueue(MemoryStore(), OPS_POLICY)
    from crossgate import ToolCall

    for framework in ("langgraph", "langchain"):
        verdict = queue.evaluate(ToolCall(framework=framework, tool="execute_sql", args={"query": "DROP TABLE x"}))
        assert verdict.kind is VerdictKind.DENY
    queue.close()

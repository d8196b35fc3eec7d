"""The verdict is for the arguments the tool will receive, not the model's raw ones (issue 11, class 1).

A typed LangChain tool converts ``"amount": "1000000"`` to ``1000000`` when it runs. Through a real
``ToolNode`` (``gated_tool_wrapper``) and a real ``create_agent`` (``crossgate_middleware``), with a
scripted model, the policy, the fingerprint and the reviewer must see the converted arguments, and
arguments the tool would refuse must be refused before anything runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, ConfigDict, Field

from crossgate import Approve, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind, fingerprint
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware, gated_tool_wrapper, tool_calls_router
from crossgate_langgraph.testing import ScriptedChatModel, tool_call

TOOL = "refund_customer"
BIG = {"arg": "amount", "kind": "equals", "value": 1000000}
POLICY = Policy(
    rules=(
        PolicyRule(name="no-big-refunds", verdict=VerdictKind.DENY, tool=TOOL, where=(BIG,), reason="Too large."),
        PolicyRule(
            name="no-refund-of-one",
            verdict=VerdictKind.DENY,
            tool=TOOL,
            where=({"arg": "amount", "kind": "equals", "value": 1},),
            reason="One-unit refunds are a probe.",
        ),
        PolicyRule(
            name="review-500",
            verdict=VerdictKind.ASK,
            tool=TOOL,
            where=({"arg": "amount", "kind": "equals", "value": 500},),
        ),
    ),
    default=VerdictKind.ALLOW,
)
KINDS = ["toolnode", "create_agent", "create_agent_batched"]


class StrictRefund(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer: str
    amount: int


class Refunds:
    """A typed refund tool that logs what it received (and a variant whose schema forbids extra fields)."""

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def tool(self, *, strict: bool = False) -> BaseTool:
        def refund_customer(customer: str, amount: int) -> str:
            """Refund a customer."""
            self.ran.append({"customer": customer, "amount": amount})
            return f"refunded {amount} to {customer}"

        schema = {"args_schema": StrictRefund} if strict else {}
        return StructuredTool.from_function(refund_customer, **schema)  # type: ignore[arg-type]


def build(kind: str, queue: ReviewQueue, tool: BaseTool, model: ScriptedChatModel, saver: Any) -> Any:
    if kind.startswith("create_agent"):
        mode = "batched" if kind == "create_agent_batched" else "per_call"
        middleware = crossgate_middleware(queue, [tool], interrupt_mode=mode)
        return create_agent(model, [tool], middleware=middleware, checkpointer=saver, name="refunds-agent")

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([tool], wrap_tool_call=gated_tool_wrapper(queue)))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tool_calls_router("tools"), ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver, name="refunds-graph")


async def run_once(
    kind: str, args: dict[str, Any], saver: Any, *, strict: bool = False
) -> tuple[ReviewQueue, Gate, Any, Refunds, ScriptedChatModel]:
    queue = ReviewQueue(MemoryStore(), POLICY)
    refunds = Refunds()
    turn = AIMessage(content="", tool_calls=[tool_call(TOOL, args, "call_refund")])
    model = ScriptedChatModel(turns=[turn], final="Done.")
    graph = build(kind, queue, refunds.tool(strict=strict), model, saver)
    gate = Gate(queue, graph)
    outcome = await gate.run(graph, {"messages": [("user", "refund please")]}, thread=f"refund-{kind}")
    return queue, gate, outcome, refunds, model


def told(model: ScriptedChatModel) -> ToolMessage:
    [message] = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
    return message


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("amount", ["1000000", 1000000.0, " 1000000 "], ids=["string", "float", "padded"])
async def test_a_deny_holds_for_an_amount_the_tool_would_convert(saver, kind: str, amount: Any) -> None:
    queue, _, outcome, refunds, model = await run_once(kind, {"customer": "c1", "amount": amount}, saver)
    assert isinstance(outcome, Finished)
    assert refunds.ran == [], "the refund never runs"
    message = told(model)
    assert message.status == "error" and "Too large." in str(message.content)
    [denied] = [e for e in queue.events() if e.kind == "auto_denied"]
    assert denied.payload["args"] == {"customer": "c1", "amount": 1000000}


@pytest.mark.parametrize("kind", KINDS)
async def test_a_bool_for_an_int_is_judged_as_the_int_the_tool_receives(saver, kind: str) -> None:
    _, _, outcome, refunds, model = await run_once(kind, {"customer": "c1", "amount": True}, saver)
    assert isinstance(outcome, Finished)
    assert refunds.ran == []  # the tool would have received amount=1, which the policy denies
    assert "One-unit refunds are a probe." in str(told(model).content)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_extra_field_is_dropped_as_the_tool_drops_it(saver, kind: str) -> None:
    args = {"customer": "c1", "amount": "1000000", "note": "ignore the policy"}
    _, _, outcome, refunds, model = await run_once(kind, args, saver)
    assert isinstance(outcome, Finished)
    assert refunds.ran == []
    assert "Too large." in str(told(model).content)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_extra_field_the_schema_forbids_is_refused_and_nothing_runs(saver, kind: str) -> None:
    queue, _, outcome, refunds, model = await run_once(
        kind, {"customer": "c1", "amount": 5, "note": "x"}, saver, strict=True
    )
    assert isinstance(outcome, Finished)
    assert refunds.ran == []
    message = told(model)
    assert message.status == "error"
    assert "did not run refund_customer" in str(message.content) and "'note'" in str(message.content)
    assert any(e.kind in ("ran", "not_run") and "'note'" in str(e.payload.get("error")) for e in queue.events())


@pytest.mark.parametrize("kind", KINDS)
async def test_arguments_the_tool_would_refuse_are_refused_before_the_policy(saver, kind: str) -> None:
    queue, _, outcome, refunds, model = await run_once(kind, {"customer": "c1", "amount": "lots"}, saver)
    assert isinstance(outcome, Finished)
    assert refunds.ran == []
    message = told(model)
    assert message.status == "error" and "amount" in str(message.content)
    assert not [e for e in queue.events() if e.kind in ("auto_allowed", "auto_denied", "submitted")]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_reviewer_sees_and_approves_the_converted_arguments(saver, kind: str) -> None:
    queue, gate, outcome, refunds, model = await run_once(kind, {"customer": "c1", "amount": "500"}, saver)
    assert isinstance(outcome, Parked), "amount 500 asks, once converted"
    [request_id] = outcome.request_ids
    request = queue.get(request_id)
    assert request.call.args == {"customer": "c1", "amount": 500}
    assert request.fingerprint == fingerprint(TOOL, {"customer": "c1", "amount": 500})
    queue.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert refunds.ran == [{"customer": "c1", "amount": 500}]
    assert told(model).content == "refunded 500 to c1"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_plain_allowed_call_still_runs(saver, kind: str) -> None:
    _, _, outcome, refunds, _ = await run_once(kind, {"customer": "c1", "amount": "25"}, saver)
    assert isinstance(outcome, Finished)
    assert refunds.ran == [{"customer": "c1", "amount": 25}]


async def test_request_approval_with_a_schema_refuses_a_string_for_a_number(saver) -> None:
    from typing import TypedDict

    from crossgate import Reject
    from crossgate_langgraph import request_approval

    class State(TypedDict, total=False):
        amount: Any
        outcome: str

    queue = ReviewQueue(MemoryStore(), POLICY)
    refunds = Refunds()
    schema = refunds.tool().tool_call_schema.model_json_schema()  # type: ignore[union-attr]

    def refund(state: State) -> State:
        args = {"customer": "c1", "amount": state["amount"]}
        decision = request_approval(queue, TOOL, args, args_schema=schema)
        if isinstance(decision, Reject):
            return {"outcome": decision.message}
        refunds.ran.append(args)
        return {"outcome": "refunded"}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    graph = builder.compile(checkpointer=saver, name="refund-node")
    done = await Gate(queue, graph).run(graph, {"amount": "1000000"}, thread="node")
    assert isinstance(done, Finished)
    assert refunds.ran == []
    assert "did not run refund_customer" in done.result["outcome"] and "amount" in done.result["outcome"]
    allowed = await Gate(queue, graph).run(graph, {"amount": 7}, thread="node-2")
    assert isinstance(allowed, Finished) and refunds.ran == [{"customer": "c1", "amount": 7}]


class Move(BaseModel):
    source: str = Field(alias="from")
    times: int = 1


@pytest.mark.parametrize("kind", KINDS)
async def test_an_aliased_argument_is_judged_by_the_name_the_tool_takes(saver, kind: str) -> None:
    deny = PolicyRule(
        name="not-from-etc",
        verdict=VerdictKind.DENY,
        tool="move",
        where=({"arg": "from", "kind": "equals", "value": "/etc"},),
        reason="Never move /etc.",
    )
    queue = ReviewQueue(MemoryStore(), Policy(rules=(deny,), default=VerdictKind.ALLOW))
    moved: list[dict[str, Any]] = []
    tool = StructuredTool.from_function(
        lambda **kw: moved.append(kw) or "moved", name="move", description="Move a path.", args_schema=Move
    )
    calls = [tool_call("move", {"from": "/etc", "times": "2"}, "c1"), tool_call("move", {"from": "/tmp"}, "c2")]
    model = ScriptedChatModel(turns=[AIMessage(content="", tool_calls=calls)], final="Done.")
    graph = build(kind, queue, tool, model, saver)
    done = await Gate(queue, graph).run(graph, {"messages": [("user", "move")]}, thread="alias")
    assert isinstance(done, Finished)
    assert moved == [{"source": "/tmp", "times": 1}]

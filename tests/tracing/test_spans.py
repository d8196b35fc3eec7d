"""The spans of a call's life in one process, what they say, what they never say, and tracing off."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from crossgate import Approve, MemoryStore, Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind, tracing
from crossgate.adapter import run_checked

POLICY = Policy(
    rules=(
        PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),
        PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*", reason="Deleting cannot be undone."),
    )
)
SECRET = "hunter2-do-not-trace"


def call(tool: str = "delete_ticket") -> ToolCall:
    return ToolCall(
        framework="openai-agents", tool=tool, args={"id": "t1", "token": SECRET}, call_id="c1", run="r1", agent="bot"
    )


async def _delete(args: dict[str, object]) -> str:
    return f"deleted {args['id']}"


async def test_a_reviewed_call_is_one_trace_under_the_agents_span(exporter: InMemorySpanExporter) -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with trace.get_tracer("agent").start_as_current_span("agent run") as root:
        request = queue.submit(call()).request
        assert request is not None
        waiting = asyncio.create_task(queue.wait(request.id, timeout=5))
        await asyncio.sleep(0.01)
        queue.decide(request.id, Approve(), reviewer="ann", channel="web")
        decided = await waiting
        answer = await run_checked(queue, decided, call().args, _delete, actor="bot")
    assert answer.result == "deleted t1"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert {"crossgate.evaluate", "crossgate.submit", "crossgate.wait", "crossgate.decide", "crossgate.apply",
            "crossgate.outcome"} <= set(spans)  # fmt: skip
    trace_id = root.get_span_context().trace_id
    assert {s.context.trace_id for s in spans.values()} == {trace_id}
    assert spans["crossgate.evaluate"].attributes["crossgate.verdict"] == "ask"
    assert spans["crossgate.evaluate"].attributes["crossgate.rule"] == "deletes"
    assert spans["crossgate.submit"].attributes["gen_ai.tool.name"] == "delete_ticket"
    assert spans["crossgate.submit"].attributes["gen_ai.tool.call.id"] == "c1"
    decide = spans["crossgate.decide"].attributes
    assert (decide["crossgate.decision.kind"], decide["crossgate.decision.channel"]) == ("approve", "web")
    assert decide["crossgate.reviewer.kind"] == "reviewer"
    assert spans["crossgate.wait"].attributes["crossgate.request.status"] == "decided"
    assert spans["crossgate.outcome"].attributes["crossgate.outcome"] == "ran"
    assert spans["crossgate.outcome"].attributes["gen_ai.operation.name"] == "execute_tool"
    for span in spans.values():
        assert SECRET not in str(dict(span.attributes or {})), f"{span.name} carries an argument value"
        assert "ann" not in (span.attributes or {}).values(), f"{span.name} names the reviewer"


def test_the_decision_joins_the_trace_the_call_was_submitted_in(exporter: InMemorySpanExporter) -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with trace.get_tracer("agent").start_as_current_span("agent run") as root:
        request = queue.submit(call()).request
    assert request is not None
    with trace.get_tracer("reviewer").start_as_current_span("reviewer click") as click:
        queue.decide(request.id, Approve(), reviewer="ann")
    [decide] = [s for s in exporter.get_finished_spans() if s.name == "crossgate.decide"]
    assert decide.context.trace_id == root.get_span_context().trace_id
    assert [link.context.span_id for link in decide.links] == [click.get_span_context().span_id]


def test_argument_values_are_recorded_only_when_configured(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracing.ARGUMENTS_ENV, "1")
    ReviewQueue(MemoryStore(), POLICY).evaluate(call("read_ticket"))
    [evaluate] = exporter.get_finished_spans()
    assert SECRET in str(evaluate.attributes["gen_ai.tool.call.arguments"])
    assert evaluate.attributes["crossgate.verdict"] == "allow"


def test_with_no_sdk_configured_nothing_is_traced_or_stored() -> None:
    assert not tracing.enabled()
    queue = ReviewQueue(MemoryStore(), POLICY)
    with trace.get_tracer("agent").start_as_current_span("agent run"):
        request = queue.submit(call()).request
        assert tracing.current_traceparent() is None
    assert request is not None
    [submitted] = queue.events(request_id=request.id)
    assert tracing.TRACEPARENT not in submitted.payload
    assert tracing.span("crossgate.evaluate", call=call()).__enter__() is None


@pytest.mark.slow
def test_without_the_otel_extra_crossgate_gates_calls_and_traces_nothing() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from crossgate import MemoryStore, ReviewQueue, ToolCall, tracing\n"
        "q = ReviewQueue(MemoryStore())\n"
        "r = q.submit(ToolCall(framework='langgraph', tool='t', args={})).request\n"
        "assert r is not None and not tracing.enabled() and tracing.current_traceparent() is None\n"
        "assert tracing.span('x').__enter__() is None\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "ok", done.stderr

"""``traceparent`` over HTTP: what ``RemoteQueue`` sends, and the AAP provider joining the runtime's trace."""

from __future__ import annotations

import json

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from crossgate import ReviewQueue, ToolCall
from crossgate.remote import RemoteQueue
from tests.server.aap.conftest import call, http, provision, queue, reviewer  # noqa: F401  (http, queue: fixtures)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
VERDICT = {"kind": "allow", "reason": "", "rule": None}


def remote(sent: list[httpx.Request]) -> RemoteQueue:
    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=VERDICT)

    return RemoteQueue("http://127.0.0.1:1", token="agent-token-00000001", transport=httpx.MockTransport(answer))


def evaluate(remote_queue: RemoteQueue) -> None:
    remote_queue.evaluate(ToolCall(framework="openai-agents", tool="read", args={}, call_id="c", run="r"))


def test_remote_queue_sends_the_agents_span_as_traceparent(exporter: InMemorySpanExporter) -> None:
    sent: list[httpx.Request] = []
    with trace.get_tracer("agent").start_as_current_span("agent run") as root:
        evaluate(remote(sent))
    context = root.get_span_context()
    version, trace_id, span_id, _flags = sent[0].headers["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", f"{context.trace_id:032x}", f"{context.span_id:016x}")


def test_with_tracing_off_remote_queue_sends_no_traceparent() -> None:
    sent: list[httpx.Request] = []
    with trace.get_tracer("agent").start_as_current_span("agent run"):
        evaluate(remote(sent))
    assert "traceparent" not in sent[0].headers


async def test_an_aap_request_and_its_decision_join_the_runtimes_trace(
    http: httpx.AsyncClient,  # noqa: F811
    queue: ReviewQueue,  # noqa: F811
    exporter: InMemorySpanExporter,
) -> None:
    _, token = await provision(http)
    made = await http.post(
        "/aap/v1/requests",
        json=call(),
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "c-1", "traceparent": TRACEPARENT},
    )
    assert made.status_code in (200, 201, 202), made.text
    [pending] = queue.pending()
    [submitted] = queue.events(request_id=pending.id)
    assert submitted.payload["traceparent"].split("-")[1] == TRACE_ID
    decided = await http.post(f"/api/requests/{pending.id}/decision", json={"kind": "approve"}, headers=reviewer())
    assert decided.status_code == 200, decided.text
    spans = {s.name: s for s in exporter.get_finished_spans()}
    for name in ("crossgate.submit", "crossgate.decide"):
        assert f"{spans[name].context.trace_id:032x}" == TRACE_ID, name
    assert json.dumps(dict(spans["crossgate.decide"].attributes or {})).count("alice") == 0

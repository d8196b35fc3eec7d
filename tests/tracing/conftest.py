"""An OpenTelemetry SDK with the in-memory exporter, configured for one test and taken away after it;
a review server in this process (its spans land in that exporter) for agents in other processes.

The API lets a process set its global tracer provider once; the fixture swaps the global in and out,
so the tests outside this folder keep running with tracing off, as a user without an SDK does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from crossgate import Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.settings import agent_token, reviewer
from tests.conformance.harness import TOOL
from tests.server.live import live_server

ANN = "ann-reviewer-token-01"
AGENT = "ticket-agent-token-0001"
POLICY = Policy(
    rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool=TOOL, reason="Deleting cannot be undone."),),
    default=VerdictKind.ALLOW,
)


@pytest.fixture
def server(tmp_path: Path, exporter: InMemorySpanExporter) -> Iterator[tuple[str, ReviewQueue]]:
    """A review server on 127.0.0.1 (its URL, and its queue) with reviewer ann and the agent's credential."""
    queue = ReviewQueue(open_store(str(tmp_path / "crossgate.db")), POLICY)
    settings = ServerSettings(
        reviewers=(reviewer("ann", ANN),), agents=(agent_token("ticket-agent", AGENT),), secret=b"s" * 32
    )
    with live_server(create_app(queue, settings)) as url:
        yield url, queue
    queue.close()


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The spans this test process ends, while an SDK is the global tracer provider."""
    collected = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collected))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield collected
    provider.shutdown()

"""An OpenTelemetry SDK with the in-memory exporter, configured for one test and taken away after it.

The API lets a process set its global tracer provider once; the fixture swaps the global in and out,
so the tests outside this folder keep running with tracing off, as a user without an SDK does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The spans this test process ends, while an SDK is the global tracer provider."""
    collected = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collected))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield collected
    provider.shutdown()

"""Tracing on for one variant of a benchmark: an OpenTelemetry SDK whose exporter keeps nothing.

The API lets a process set its tracer provider once, so the switch swaps the API's global in for the
variant's run and back out after it (the same as ``tests/tracing/conftest.py``): the other variants
of the same run measure tracing off, as a user without an SDK has it. Spans are made, ended and handed
to a ``SimpleSpanProcessor`` whose exporter drops them, so the figure is crossgate's cost of tracing
plus the SDK's own, without an exporter's I/O.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

T = TypeVar("T")


class DroppingExporter(SpanExporter):
    """Counts the spans it is given and keeps none."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def sdk_provider() -> tuple[TracerProvider, DroppingExporter]:
    """A tracer provider that ends every span into a :class:`DroppingExporter`."""
    exporter = DroppingExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@contextmanager
def tracing_on(provider: TracerProvider) -> Iterator[None]:
    """``provider`` is the global tracer provider inside the block, and the API's default again after it."""
    before = trace._TRACER_PROVIDER  # the API's own global: set once per process, so swapped here
    trace._TRACER_PROVIDER = provider
    try:
        yield
    finally:
        trace._TRACER_PROVIDER = before


def traced(run: Callable[[int], Awaitable[T]], provider: TracerProvider) -> Callable[[int], Awaitable[T]]:
    """``run`` with tracing on for each call, under a root span as an instrumented app would have."""

    async def with_tracing(i: int) -> T:
        with tracing_on(provider), trace.get_tracer("bench").start_as_current_span("agent run"):
            return await run(i)

    return with_tracing

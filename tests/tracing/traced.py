"""Run a ticket driver's start or resume in this process under an OpenTelemetry SDK; write its spans as JSON.

``python -c '...main()' OUT.json openai|langgraph start|resume ARGS...``: the SDK's in-memory exporter
collects every span the process ends, and they are written to ``OUT.json`` for the test to join with the
spans of the other processes. ``start`` runs inside a root span, ``agent run``, as an app's own
instrumentation would; ``resume`` runs with no span of its own, as a worker would.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parents[2]
ROOT_SPAN = "agent run"


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as JSON: ids in hex, times in nanoseconds, attributes as given."""
    context = span.get_span_context()
    assert context is not None
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": None if parent is None else f"{parent.span_id:016x}",
        "start": span.start_time,
        "end": span.end_time,
        "attributes": dict(span.attributes or {}),
        "links": [f"{link.context.trace_id:032x}" for link in span.links],
        "process": os.getpid(),
    }


def command(out: Path, framework: str, action: str, args: Sequence[str]) -> list[str]:
    """The command line that runs :func:`main` in a fresh interpreter."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.tracing.traced import main; main()"
    return [sys.executable, "-c", code, str(out), framework, action, *args]


def _run(framework: str, action: str, args: list[str]) -> None:
    if framework == "openai":
        from tests.adapters.openai.driver import main as openai_main

        openai_main([action, *args])
        return
    from crossgate import open_queue
    from crossgate.runs import Finished
    from crossgate.testing import TicketStore
    from tests.adapters.langgraph.driver import LangGraphTicketDriver

    db, tickets, workdir, target = args
    queue = open_queue(db)
    driver = LangGraphTicketDriver(queue, TicketStore(Path(tickets)), Path(workdir), db)  # type: ignore[arg-type]
    try:
        if action == "start":
            outcome = asyncio.run(driver.start(target.split(","), run="traced"))
        else:
            outcome = asyncio.run(driver.resume(target))
    finally:
        queue.close()
    if isinstance(outcome, Finished):
        print(json.dumps({"finished": outcome.run}))
    else:
        print(json.dumps({"parked_run": outcome.parked_run, "request_ids": list(outcome.request_ids)}))


def main() -> None:
    """Configure the SDK, run the driver, write the spans."""
    out, framework, action, *args = sys.argv[1:]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        if action == "start":
            with trace.get_tracer("tests").start_as_current_span(ROOT_SPAN):
                _run(framework, action, args)
        else:
            _run(framework, action, args)
    finally:
        Path(out).write_text(json.dumps([span_record(s) for s in exporter.get_finished_spans()]), encoding="utf-8")

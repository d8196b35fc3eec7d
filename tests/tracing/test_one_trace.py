"""A run parked in one process, decided on the server and resumed in another is one trace.

The agent processes reach the review server over HTTP (``RemoteQueue``): the parking process under its
own root span, the resuming one with none, as a worker. The server runs in this process with the SDK's
in-memory exporter; each agent process writes its spans to a file (``tests.tracing.traced``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from crossgate import RequestStatus, ReviewQueue
from crossgate.testing import TicketStore
from tests.tracing.conftest import AGENT, ANN
from tests.tracing.traced import ROOT_SPAN, command, span_record


def run_traced(out: Path, framework: str, action: str, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "CROSSGATE_AGENT_TOKEN": AGENT}
    argv = command(out, framework, action, args)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def decide_on_the_server(url: str, request_id: str) -> None:
    answer = httpx.post(
        f"{url}/api/requests/{request_id}/decision",
        json={"kind": "approve"},
        headers={"Authorization": f"Bearer {ANN}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


def assert_one_trace(spans: list[dict[str, Any]], parked: list[dict[str, Any]], resumed: list[dict[str, Any]]) -> None:
    [root] = [s for s in parked if s["name"] == ROOT_SPAN]
    assert {s["trace_id"] for s in spans} == {root["trace_id"]}, sorted({(s["name"], s["trace_id"]) for s in spans})
    names = [s["name"] for s in spans]
    for name in ("crossgate.evaluate", "crossgate.park", "crossgate.decide", "crossgate.resume", "crossgate.apply"):
        assert name in names, f"no {name} span in {sorted(set(names))}"
    [wait] = [s for s in resumed if s["name"] == "crossgate.wait"]
    [decide] = [s for s in spans if s["name"] == "crossgate.decide"]
    assert wait["start"] < decide["start"] < wait["end"], "the wait spans the time until the run was resumed"
    by_id = {s["span_id"]: s for s in spans}
    assert by_id[wait["parent_id"]]["process"] != wait["process"], "the wait hangs under the parking process's span"
    [resume] = [s for s in resumed if s["name"] == "crossgate.resume"]
    [apply] = [s for s in spans if s["name"] == "crossgate.apply"]
    assert apply["parent_id"] is not None
    assert by_id[apply["parent_id"]]["name"].startswith("crossgate.") or apply["parent_id"] == resume["span_id"]


def park_decide_resume(
    url: str, queue: ReviewQueue, exporter: InMemorySpanExporter, tmp_path: Path, framework: str, start: list[str]
) -> None:
    """Park in one process, decide on the server, resume in another; check the spans make one trace."""
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    paths = {"tickets": str(tickets.path), "workdir": str(tmp_path), "db": url}
    args = [paths.get(a, a) for a in start]
    first = run_traced(tmp_path / "parked.json", framework, "start", args)
    [request_id] = first["request_ids"]
    decide_on_the_server(url, request_id)
    resume = [*args[:-1], first["parked_run"]] if framework == "langgraph" else [*args[:6], first["parked_run"]]
    done = run_traced(tmp_path / "resumed.json", framework, "resume", resume)
    assert done == {"finished": "traced"}
    assert queue.get(request_id).status is RequestStatus.APPLIED
    parked = json.loads((tmp_path / "parked.json").read_text())
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    server_spans = [span_record(s) for s in exporter.get_finished_spans() if s.name.startswith("crossgate.")]
    assert_one_trace([*parked, *server_spans, *resumed], parked, resumed)


@pytest.mark.slow
def test_an_openai_run_parked_decided_and_resumed_is_one_trace(
    server: tuple[str, ReviewQueue], exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    start = ["--db", "db", "--tickets", "tickets", "--workdir", "workdir", "--run", "traced", "t3"]
    park_decide_resume(*server, exporter, tmp_path, "openai", start)


@pytest.mark.slow
def test_a_langgraph_run_parked_decided_and_resumed_is_one_trace(
    server: tuple[str, ReviewQueue], exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    park_decide_resume(*server, exporter, tmp_path, "langgraph", ["db", "tickets", "workdir", "t3"])

"""A TypeScript agent over HTTP: parked in one node process, decided on the server, resumed in another, one trace.

The node processes use ``@crossgate/client`` with the ``traceparent`` option: the first under the
agent's span (a fixed context, as an app's OpenTelemetry setup would give it), the second with the
context the server stored with the parked run, as a resumer does. The server's spans land in this
process's in-memory exporter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from crossgate import RequestStatus, ReviewQueue
from tests.tracing.conftest import AGENT
from tests.tracing.test_one_trace import decide_on_the_server

WORKSPACE = Path(__file__).resolve().parents[2] / "adapters" / "typescript"
CLIENT = WORKSPACE / "packages" / "client" / "dist" / "index.js"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
AGENT_SPAN = f"00-{TRACE_ID}-b7ad6b7169203331-01"
SCRIPT = """
import { AgentClient } from %(client)s;
const [mode, target] = process.argv.slice(1);
let traceparent = process.env.AGENT_SPAN;
const client = new AgentClient({ baseUrl: process.env.URL, token: process.env.TOKEN, traceparent: () => traceparent });
const call = { framework: 'typescript', tool: 'delete_ticket', args: { id: 't3' }, call_id: 'c1', run: 'ts-run' };
if (mode === 'park') {
  const { request } = await client.prepare(call);
  const parked = await client.park({ framework: 'typescript', run: 'ts-run', request_ids: [request.id],
                                     state: '{}', new_requests: [request] });
  console.log(JSON.stringify({ parked: parked.id, request: request.id }));
} else {
  const claimed = await client.claimParked(target, 'ts-worker');
  traceparent = claimed.metadata.traceparent;  // the resume continues the run's trace
  const id = claimed.request_ids[0];
  await client.markApplied(id, call.args);
  await client.recordOutcome({ request_id: id, ran: true, result: 'deleted t3' });
  await client.finishParked(target, 'ts-worker');
  console.log(JSON.stringify({ resumed: target }));
}
"""


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed: the TypeScript client's trace did not run")
    if not CLIENT.is_file():
        tsc = WORKSPACE / "node_modules" / ".bin" / "tsc"
        if not tsc.is_file():
            pytest.skip("adapters/typescript is not installed (npm ci): the TypeScript client's trace did not run")
        subprocess.run([str(tsc), "-b", "packages/client"], cwd=WORKSPACE, check=True, timeout=300)
    return found


def run_node(node: str, url: str, *args: str) -> dict[str, str]:
    script = SCRIPT % {"client": json.dumps(CLIENT.as_uri())}
    env = {**os.environ, "URL": url, "TOKEN": AGENT, "AGENT_SPAN": AGENT_SPAN}
    done = subprocess.run(
        [node, "--input-type=module", "-e", script, "--", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_a_typescript_run_parked_decided_and_resumed_is_one_trace(
    node: str,
    server: tuple[str, ReviewQueue],
    exporter: InMemorySpanExporter,
) -> None:
    url, queue = server
    parked = run_node(node, url, "park", "")
    decide_on_the_server(url, parked["request"])
    run_node(node, url, "resume", parked["parked"])
    assert queue.get(parked["request"]).status is RequestStatus.APPLIED
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("crossgate.")]
    names = {s.name for s in spans}
    assert {"crossgate.park", "crossgate.decide", "crossgate.apply", "crossgate.outcome"} <= names, names
    assert {f"{s.context.trace_id:032x}" for s in spans} == {TRACE_ID}
    [park] = [s for s in spans if s.name == "crossgate.park"]
    assert park.parent is not None and f"{park.parent.span_id:016x}" == AGENT_SPAN.split("-")[2]

"""The Grafana dashboard in examples/ reads only metrics ``/metrics`` serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from crossgate import MemoryStore, ReviewQueue
from crossgate.server import ServerSettings
from crossgate.server.app import create_app

DASHBOARD = Path(__file__).resolve().parents[3] / "examples" / "grafana" / "crossgate-dashboard.json"
SUFFIXES = {"counter": ("",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}


def served_names() -> set[str]:
    app = create_app(ReviewQueue(MemoryStore()), ServerSettings(secret=b"s" * 32))
    text = TestClient(app, client=("127.0.0.1", 1)).get("/metrics").text
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, flags=re.MULTILINE):
        names.update(name + suffix for suffix in SUFFIXES[kind])
    return names


def test_every_metric_the_dashboard_reads_is_served() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    read = {name for expr in expressions for name in re.findall(r"\bcrossgate_\w+", expr)}
    served = served_names()
    assert read - served == set()
    families = {n.removesuffix("_bucket") for n in read}
    for wanted in ("crossgate_requests_pending", "crossgate_time_to_decision_seconds", "crossgate_decisions_total",
                   "crossgate_refusals_total", "crossgate_delivery_lag_seconds", "crossgate_delivery_failures_total",
                   "crossgate_parked_runs"):  # fmt: skip
        assert wanted in families, f"the dashboard shows no {wanted}"

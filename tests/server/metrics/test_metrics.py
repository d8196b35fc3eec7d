"""``GET /metrics`` after a scripted day: every value is what the store says, and who may read it."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from crossgate import Approve, MemoryStore, Policy, PolicyRule, Reject, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.limits import InputLimits
from crossgate.model import ParkedRunStatus, RequestStatus
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.metrics.route import NO_TOKEN, NOT_LOOPBACK
from crossgate.server.settings import WebhookTarget, hash_token, reviewer
from tests.support.clock import FakeClock
from tests.support.postgres import database_url

ANN = "ann-reviewer-token-01"
METRICS_TOKEN = "metrics-token-000001"
LOOPBACK = ("127.0.0.1", 50000)
POLICY = Policy(
    rules=(
        PolicyRule(name="no-drop", verdict=VerdictKind.DENY, tool="drop_*", reason="Never."),
        PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*", reason="Cannot be undone."),
    ),
    default=VerdictKind.ALLOW,
)


def call(framework: str, tool: str, n: int, **args: Any) -> ToolCall:
    return ToolCall(framework=framework, tool=tool, args={"n": n, **args}, call_id=f"c{n}", run=f"r{n}")


def settings(**overrides: Any) -> ServerSettings:
    down = WebhookTarget(url="http://hooks.invalid/down", events=("submitted",))
    fields: dict[str, Any] = {
        "reviewers": (reviewer("ann", ANN),),
        "secret": b"s" * 32,
        "sweep_seconds": 0.05,
        "webhooks": (down,),
        "webhook_attempts": 1,
    }
    return ServerSettings(**{**fields, **overrides})


def scripted_day(queue: ReviewQueue, client: TestClient, clock: FakeClock) -> None:
    """Submissions, decisions over three channels, an expiry, refusals, parked runs."""
    a, b, c, d, e = (
        queue.submit(call(f, t, n), timeout_seconds=60 if n == 4 else None).request
        for n, (f, t) in enumerate(
            [("openai-agents", "delete_ticket"), ("langgraph", "delete_ticket"), ("langgraph", "delete_user"),
             ("openai-agents", "delete_ticket"), ("openai-agents", "delete_ticket")], start=1)
    )  # fmt: skip
    assert a and b and c and d and e
    clock.advance(30)
    answer = client.post(f"/api/requests/{a.id}/decision", json={"kind": "approve"}, headers=_bearer(ANN))
    assert answer.status_code == 200, answer.text
    clock.advance(90)
    queue.decide(b.id, Reject(message="No."), reviewer="bob", channel="cli")  # another process, same store
    assert [r.id for r in queue.expire_overdue()] == [d.id]
    decided_e = queue.decide(e.id, Approve(), reviewer="bob", channel="slack")
    queue.refuse_unverified(decided_e, reason="unsigned", problem="no signature", message="Not signed; not run.")
    queue.refuse_unverified(call("langchain", "read_file", 9), reason="unsigned", problem="rule", message="No.")
    assert queue.submit(call("openai-agents", "drop_table", 7)).verdict.kind is VerdictKind.DENY
    assert queue.submit(call("openai-agents", "write", 8, blob="x" * 200)).verdict.kind is VerdictKind.DENY
    f = queue.prepare(call("openai-agents", "delete_ticket", 6)).request
    assert f is not None
    queue.park(framework="openai-agents", run="r6", request_ids=[f.id], state="{}", new_requests=[f])
    done = queue.park(framework="openai-agents", run="r1", request_ids=[a.id], state="{}")
    queue.claim_parked(done, owner="w")
    queue.finish_parked(done, owner="w")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def scrape(client: TestClient, **kwargs: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    answer = client.get("/metrics", **kwargs)
    assert answer.status_code == 200, answer.text
    values: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items()))
            values.setdefault(sample.name, {})[labels] = sample.value
    return values


def by(name: str, values: dict[str, dict[tuple[tuple[str, str], ...], float]], *labels: str) -> dict[Any, float]:
    found = {}
    for key, value in values.get(name, {}).items():
        found[tuple(v for k, v in key if k in labels)] = value
    return found


@pytest.mark.slow
def test_after_a_scripted_day_every_value_is_what_the_store_says() -> None:
    clock = FakeClock()
    queue = ReviewQueue(MemoryStore(), POLICY, clock=clock, limits=InputLimits(args_bytes=100))
    app = create_app(queue, settings(), webhook_transport=httpx.MockTransport(lambda _: httpx.Response(500)))
    with TestClient(app, client=LOOPBACK) as client:
        scripted_day(queue, client, clock)
        submitted = [e for e in queue.events() if e.kind == "submitted"]
        deadline = time.monotonic() + 20
        while True:
            values = scrape(client)
            failures = by("crossgate_delivery_failures_total", values, "target_kind")
            if failures.get(("webhook",)) == len(submitted) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    store_pending = Counter((r.call.framework, r.call.tool) for r in queue.pending())
    assert store_pending == {("langgraph", "delete_user"): 1, ("openai-agents", "delete_ticket"): 1}
    assert by("crossgate_requests_pending", values, "framework", "tool") == store_pending
    decided = [e for e in queue.events() if e.kind == "decided"]
    store_decisions = Counter((e.payload["kind"], e.channel) for e in decided)
    assert store_decisions == {("approve", "api"): 1, ("reject", "cli"): 1, ("approve", "slack"): 1}
    assert by("crossgate_decisions_total", values, "channel", "kind") == {
        (channel, kind): n for (kind, channel), n in store_decisions.items()
    }
    requests = queue.list_requests().items
    times: dict[str, list[float]] = {r.call.framework: [] for r in requests}
    for r in requests:
        if r.decided_at is not None:
            times[r.call.framework].append((r.decided_at - r.created_at).total_seconds())
    assert sorted(times["openai-agents"]) == [30.0, 120.0]
    for framework, seconds in times.items():
        if not seconds:
            continue
        count = by("crossgate_time_to_decision_seconds_count", values, "framework")[(framework,)]
        total = by("crossgate_time_to_decision_seconds_sum", values, "framework")[(framework,)]
        assert (count, total) == (len(seconds), sum(seconds))
        histogram = by("crossgate_time_to_decision_seconds_bucket", values, "framework", "le")
        buckets = {le: v for (fw, le), v in histogram.items() if fw == framework}
        assert buckets["60.0"] == sum(1 for s in seconds if s <= 60)
        assert buckets["+Inf"] == len(seconds)
    expired = Counter(r.call.framework for r in requests if r.status is RequestStatus.EXPIRED)
    assert expired == {"openai-agents": 1}
    assert by("crossgate_requests_expired_total", values, "framework") == {(k,): v for k, v in expired.items()}
    assert by("crossgate_refusals_total", values, "reason") == {("policy",): 1, ("input_limits",): 1, ("unsigned",): 2}
    denied = [e for e in queue.events() if e.kind == "auto_denied"]
    refused = [e for e in queue.events() if "refused" in e.payload]
    assert len(denied) + len(refused) == 4
    parked = Counter(run.status.value for run in queue.parked_runs(statuses=tuple(ParkedRunStatus)))
    assert by("crossgate_parked_runs", values, "status") == {
        (s.value,): parked.get(s.value, 0) for s in ParkedRunStatus
    }
    assert parked == {"parked": 1, "resumed": 1}
    submitted_store = Counter((e.payload["framework"], e.payload["tool"]) for e in submitted)
    assert by("crossgate_requests_submitted_total", values, "framework", "tool") == submitted_store
    assert by("crossgate_delivery_failures_total", values, "target_kind") == {("webhook",): len(submitted)}
    assert by("crossgate_deliveries_total", values, "target_kind").get(("webhook",), 0) == 0


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_servers_on_one_store_report_the_same_counts(kind: str, tmp_path: Path) -> None:
    with database_url(kind, tmp_path) as url:
        first, second = ReviewQueue(open_store(url), POLICY), ReviewQueue(open_store(url), POLICY)
        try:
            request = first.submit(call("langgraph", "delete_ticket", 1)).request
            assert request is not None
            first.decide(request.id, Approve(), reviewer="ann", channel="cli")
            second.submit(call("langgraph", "delete_user", 2))  # recorded by the other server
            apps = [create_app(q, settings(webhooks=())) for q in (first, second)]
            a, b = scrape(TestClient(apps[0], client=LOOPBACK)), scrape(TestClient(apps[1], client=LOOPBACK))
        finally:
            first.close()
            second.close()
    for name in ("crossgate_decisions_total", "crossgate_requests_pending", "crossgate_time_to_decision_seconds_count"):
        assert a[name] == b[name], name
    assert by("crossgate_requests_pending", a, "framework", "tool") == {("langgraph", "delete_user"): 1}
    assert by("crossgate_decisions_total", b, "channel", "kind") == {("cli", "approve"): 1}


def test_a_scrape_from_another_host_is_refused_without_a_token() -> None:
    app = create_app(ReviewQueue(MemoryStore(), POLICY), settings(webhooks=()))
    client = TestClient(app, client=("203.0.113.9", 40000))
    answer = client.get("/metrics", headers=_bearer(ANN))  # a reviewer's token is not a metrics token
    assert answer.status_code == 403
    assert answer.json() == {"error": "forbidden", "message": NOT_LOOPBACK, "status": 403}


def test_with_a_metrics_token_only_its_bearer_may_scrape_from_anywhere() -> None:
    app = create_app(
        ReviewQueue(MemoryStore(), POLICY), settings(webhooks=(), metrics_token_sha256=hash_token(METRICS_TOKEN))
    )
    remote, local = TestClient(app, client=("203.0.113.9", 40000)), TestClient(app, client=LOOPBACK)  # no lifespan
    for client, headers in ((remote, None), (local, None), (remote, _bearer(ANN)), (local, _bearer("x" * 20))):
        answer = client.get("/metrics", headers=headers)
        assert answer.status_code == 401
        assert answer.json() == {"error": "unauthenticated", "message": NO_TOKEN, "status": 401}
        assert answer.headers["www-authenticate"] == "Bearer"
    assert "crossgate_requests_pending" in remote.get("/metrics", headers=_bearer(METRICS_TOKEN)).text

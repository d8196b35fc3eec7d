"""Bad input to the agent API: a 4xx with the documented body, never a 5xx, and nothing changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from crossgate import ReviewQueue
from tests.server.agent_api.conftest import AGENT, BILLING, ask, bearer, call, keyed

BAD_REQUEST_BODIES: list[Any] = [
    {},
    {"call": {}},
    {"call": {"framework": "openai-agents"}},
    {"call": call(), "extra": 1},
    {"call": {**call(), "args": "not an object"}},
    {"call": call(), "capabilities": ["launch"]},
    {"call": call(), "timeout_seconds": -1},
    {"call": call(), "timeout_seconds": "soon"},
    {"call": call(), "timeout_seconds": 1e300},  # more than a date can hold: was a 500 (OverflowError)
    {"call": call(), "request_id": ""},
    {"call": call(), "args_schema": {"type": "no-such-type"}},
    [],
    "text",
]


@pytest.mark.parametrize("body", BAD_REQUEST_BODIES)
async def test_a_bad_request_body_is_a_422_and_stores_nothing(
    http: httpx.AsyncClient, queue: ReviewQueue, body: Any
) -> None:
    r = await http.post(f"{AGENT}/requests", json=body, headers=keyed(BILLING, "k"))
    assert r.status_code == 422, r.text
    assert set(r.json()) == {"error", "message", "status"} and r.json()["status"] == 422
    assert queue.events() == [] and queue.pending() == []


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"call": 1e999999}', b'{"call": {}, "call": {}}', b"\xff\xfe", b"[" * 5000 + b"]" * 5000],
)
async def test_text_that_is_not_acceptable_json_is_a_422(
    http: httpx.AsyncClient, queue: ReviewQueue, raw: bytes
) -> None:
    headers = {**keyed(BILLING, "k"), "content-type": "application/json"}
    r = await http.post(f"{AGENT}/requests", content=raw, headers=headers)
    assert r.status_code == 422, r.text
    assert queue.events() == []


async def test_a_creating_post_without_its_key_is_refused(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    for path, body in (
        ("/requests", {"call": call()}),
        ("/outcomes", {"request_id": None, "ran": True, "call": call("read_ticket")}),
        ("/parked", {"framework": "f", "run": "r", "request_ids": ["x"], "state": "s"}),
    ):
        r = await http.post(f"{AGENT}{path}", json=body, headers=bearer(BILLING))
        assert r.status_code == 422 and r.json()["error"] == "idempotency_key_required", path
    for key in ("x" * 201, "line\nbreak"):
        r = await http.post(f"{AGENT}/requests", json={"call": call()}, headers=keyed(BILLING, key))
        assert r.status_code == 422, repr(key)
    assert queue.events() == []


async def test_a_body_over_the_limit_is_a_413(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    huge = {"call": call(id="x" * 2_000_000)}
    r = await http.post(f"{AGENT}/requests", json=huge, headers=keyed(BILLING, "k"))
    assert r.status_code == 413 and r.json()["status"] == 413
    assert queue.events() == []


async def test_bad_park_claim_finish_and_query_input_is_a_422(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    before = len(queue.events())
    for body in (
        {"framework": "f", "run": "r", "request_ids": [rid], "state": ""},
        {"framework": "f", "run": "r", "request_ids": [], "state": "s"},
        {"framework": "", "run": "r", "request_ids": [rid], "state": "s"},
        {"framework": "f", "run": "r", "request_ids": [rid], "state": "s", "new_requests": [{"id": "x"}]},
    ):
        r = await http.post(f"{AGENT}/parked", json=body, headers=keyed(BILLING, "p"))
        assert r.status_code == 422, body
    body = {"framework": "f", "run": "r", "request_ids": [rid], "state": "s"}
    pid = (await http.post(f"{AGENT}/parked", json=body, headers=keyed(BILLING, "p-ok"))).json()["id"]
    for claim in ({}, {"owner": ""}, {"owner": "w", "lease_seconds": 0}, {"owner": "w", "lease_seconds": "x"}):
        r = await http.post(f"{AGENT}/parked/{pid}/claim", json=claim, headers=bearer(BILLING))
        assert r.status_code == 422, claim
    r = await http.post(f"{AGENT}/parked/{pid}/finish", json={"owner": "w", "status": "done"}, headers=bearer(BILLING))
    assert r.status_code == 422
    for params in ({"status": "nope"}, {"limit": 0}, {"limit": 100000}, {"cursor": "!!"}):
        r = await http.get(f"{AGENT}/requests", params=params, headers=bearer(BILLING))
        assert r.status_code == 422, params
    r = await http.get(f"{AGENT}/parked", params={"status": "nope"}, headers=bearer(BILLING))
    assert r.status_code == 422
    assert len(queue.events()) == before + 1, "only the good park was recorded"
    assert queue.get_parked(pid).status.value == "parked"


async def test_an_unknown_agent_route_is_a_404_with_the_documented_body(http: httpx.AsyncClient) -> None:
    r = await http.get(f"{AGENT}/nope", headers=bearer(BILLING))
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = await http.delete(f"{AGENT}/requests", headers=bearer(BILLING))
    assert r.status_code == 405 and r.json()["status"] == 405

"""Parked runs over the agent API: the SDK state stays server-side, requests handed back are prepared again."""

from __future__ import annotations

from typing import Any

import httpx

from crossgate import Approve, ReviewQueue
from tests.server.agent_api.conftest import AGENT, BILLING, ask, bearer, keyed


async def _prepared(http: httpx.AsyncClient, request_id: str = "req-p1", key: str = "prep") -> dict[str, Any]:
    r = await ask(http, key=key, store=False, request_id=request_id)
    assert r.json()["stored"] is False
    request: dict[str, Any] = r.json()["request"]
    return request


def _park(request: dict[str, Any], state: str = "RUNSTATE") -> dict[str, Any]:
    return {
        "framework": "openai-agents",
        "run": "run-1",
        "request_ids": [request["id"]],
        "state": state,
        "metadata": {"agent": "triage"},
        "new_requests": [request],
    }


async def test_park_stores_the_run_and_its_new_request_together(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = await _prepared(http)
    r = await http.post(f"{AGENT}/parked", json=_park(request), headers=keyed(BILLING, "p-1"))
    assert r.status_code == 201
    parked = r.json()
    assert parked["state"] == "RUNSTATE" and parked["metadata"]["agent"] == "triage"
    assert parked["metadata"]["crossgate_agent"]["name"] == "billing-bot"
    assert [p.id for p in queue.pending()] == ["req-p1"]
    kinds = [(e.kind, e.actor, e.channel) for e in queue.events()]
    assert kinds == [("submitted", "billing-bot", "agent-api"), ("run_parked", "billing-bot", "agent-api")]
    got = await http.get(f"{AGENT}/parked/{parked['id']}", headers=bearer(BILLING))
    assert got.json()["state"] == "RUNSTATE", "only the parking credential reads the state back"
    ready = await http.get(f"{AGENT}/parked/{parked['id']}/ready", headers=bearer(BILLING))
    assert ready.json() == {"ready": False}
    queue.decide("req-p1", Approve(), reviewer="alice")
    ready = await http.get(f"{AGENT}/parked/{parked['id']}/ready", headers=bearer(BILLING))
    assert ready.json() == {"ready": True}


async def test_park_replays_its_key_and_refuses_it_for_another_state(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = await _prepared(http)
    first = await http.post(f"{AGENT}/parked", json=_park(request), headers=keyed(BILLING, "p-1"))
    again = await http.post(f"{AGENT}/parked", json=_park(request), headers=keyed(BILLING, "p-1"))
    assert (first.status_code, again.status_code) == (201, 200) and again.headers["idempotent-replay"] == "true"
    assert again.json()["id"] == first.json()["id"]
    other = await http.post(f"{AGENT}/parked", json=_park(request, "OTHER"), headers=keyed(BILLING, "p-1"))
    assert other.status_code == 409 and other.json()["error"] == "idempotency_conflict"
    assert len(queue.parked_runs()) == 1 and len(queue.pending()) == 1


async def test_a_forged_decision_handed_back_is_refused_and_nothing_is_stored(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = await _prepared(http)
    forged = {
        **request,
        "status": "decided",
        "decision": {"kind": "approve", "reviewer": "alice", "fingerprint": request["fingerprint"]},
    }
    r = await http.post(f"{AGENT}/parked", json=_park(forged), headers=keyed(BILLING, "p-1"))
    assert r.status_code == 422
    assert queue.parked_runs() == [] and queue.pending() == [] and queue.events() == []


async def test_what_the_policy_decides_is_taken_from_the_policy_not_from_the_request_handed_back(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = await _prepared(http)
    tampered = {
        **request,
        "reason": "pre-approved by security",
        "rule": "no-such-rule",
        "approvals_required": 1,
        "call": {**request["call"], "context": {"crossgate_agent": {"id": "x", "name": "support-bot"}}},
    }
    r = await http.post(f"{AGENT}/parked", json=_park(tampered), headers=keyed(BILLING, "p-1"))
    assert r.status_code == 201
    stored = queue.get("req-p1")
    assert stored.reason == "Deleting a ticket cannot be undone." and stored.rule == "deletes"
    assert stored.call.context["crossgate_agent"]["name"] == "billing-bot"


async def test_a_prepared_call_the_policy_no_longer_asks_about_is_not_parked(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = await _prepared(http)
    swapped = {**request, "call": {**request["call"], "tool": "read_ticket"}}
    r = await http.post(f"{AGENT}/parked", json=_park(swapped), headers=keyed(BILLING, "p-1"))
    assert r.status_code == 409
    assert queue.parked_runs() == [] and queue.pending() == []


async def test_park_refuses_new_requests_outside_its_ids_and_unknown_ids(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = await _prepared(http)
    stray = {**_park(request), "request_ids": ["req-other"]}
    r = await http.post(f"{AGENT}/parked", json=stray, headers=keyed(BILLING, "p-1"))
    assert r.status_code == 422
    unknown = {**_park(request), "new_requests": [], "request_ids": ["req-nobody"]}
    r = await http.post(f"{AGENT}/parked", json=unknown, headers=keyed(BILLING, "p-2"))
    assert r.status_code == 404
    assert queue.parked_runs() == [] and queue.events() == []


async def test_claim_is_a_lease_and_a_parked_state_is_resumed_once(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    body = {"framework": "openai-agents", "run": "run-1", "request_ids": [rid], "state": "S"}
    pid = (await http.post(f"{AGENT}/parked", json=body, headers=keyed(BILLING, "p-1"))).json()["id"]
    claim = f"{AGENT}/parked/{pid}/claim"
    first = await http.post(claim, json={"owner": "w1", "lease_seconds": 60}, headers=bearer(BILLING))
    assert first.status_code == 200 and first.json()["lease_owner"] == "w1" and first.json()["state"] == "S"
    held = await http.post(claim, json={"owner": "w2"}, headers=bearer(BILLING))
    assert held.status_code == 409 and held.json()["error"] == "lease_held"
    not_mine = await http.post(f"{AGENT}/parked/{pid}/finish", json={"owner": "w2"}, headers=bearer(BILLING))
    assert not_mine.status_code == 409 and queue.get_parked(pid).status.value == "resuming"
    done = await http.post(
        f"{AGENT}/parked/{pid}/finish", json={"owner": "w1", "outcome": "finished"}, headers=bearer(BILLING)
    )
    assert done.json()["status"] == "resumed"
    again = await http.post(claim, json={"owner": "w3"}, headers=bearer(BILLING))
    assert again.status_code == 409 and again.json()["error"] == "already_resumed"
    listed = await http.get(f"{AGENT}/parked", params={"status": "resumed"}, headers=bearer(BILLING))
    assert [p["id"] for p in listed.json()] == [pid]
    claims = [e for e in queue.events() if e.kind == "run_claimed"]
    assert [(e.actor, e.channel) for e in claims] == [("billing-bot", "agent-api")]

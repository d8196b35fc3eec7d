"""Who may call the agent API: agent credentials only; what they may reach: only what they created."""

from __future__ import annotations

import httpx
import pytest

from crossgate import Approve, ReviewQueue
from tests.server.agent_api.conftest import (
    AGENT,
    BILLING,
    PROVISIONER,
    SUPPORT,
    ask,
    bearer,
    call,
    keyed,
    reviewer,
)

ROUTES = [
    ("GET", "/policy"),
    ("POST", "/evaluate"),
    ("POST", "/requests"),
    ("GET", "/requests"),
    ("GET", "/requests/req_x"),
    ("POST", "/requests/req_x/cancel"),
    ("POST", "/requests/req_x/applied"),
    ("POST", "/outcomes"),
    ("GET", "/requests/req_x/outcome"),
    ("POST", "/expire"),
    ("POST", "/parked"),
    ("GET", "/parked"),
    ("GET", "/parked/park_x"),
    ("GET", "/parked/park_x/ready"),
    ("POST", "/parked/park_x/claim"),
    ("POST", "/parked/park_x/finish"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_refuses_reviewers_provisioners_and_strangers(
    http: httpx.AsyncClient, queue: ReviewQueue, method: str, path: str
) -> None:
    for headers, status in (
        (reviewer("alice"), 403),
        (bearer(PROVISIONER), 403),
        (bearer("not-a-token-of-anyone"), 401),
        ({}, 401),
        ({"Authorization": "Basic abc"}, 401),
    ):
        r = await http.request(method, f"{AGENT}{path}", json={}, headers={**headers, "Idempotency-Key": "k"})
        assert r.status_code == status, (headers, r.text)
        assert r.json()["status"] == status and r.json()["error"] in ("forbidden", "unauthenticated")
    assert queue.events() == [] and queue.pending() == []


async def test_an_agent_token_may_not_decide_add_rules_or_read_the_review_queue(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    decide = await http.post(f"/api/requests/{rid}/decision", json={"kind": "approve"}, headers=bearer(BILLING))
    assert decide.status_code == 403
    rule = {"effect": "allow", "tool": "delete_ticket"}
    assert (await http.post("/api/rules", json=rule, headers=bearer(BILLING))).status_code == 403
    assert (await http.get("/api/requests", headers=bearer(BILLING))).status_code == 403
    assert (await http.get("/api/events", headers=bearer(BILLING))).status_code == 403
    assert queue.get(rid).status.value == "pending" and queue.rules() == []


async def test_another_agents_request_does_not_exist_for_it(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rid = (await ask(http, BILLING)).json()["request"]["id"]
    queue.decide(rid, Approve(), reviewer="alice")
    other = bearer(SUPPORT)
    for method, path, body in (
        ("GET", f"/requests/{rid}", None),
        ("GET", f"/requests/{rid}?wait=1", None),
        ("POST", f"/requests/{rid}/cancel", {}),
        ("POST", f"/requests/{rid}/applied", {"args": {"id": "t1"}}),
        ("GET", f"/requests/{rid}/outcome", None),
    ):
        r = await http.request(method, f"{AGENT}{path}", json=body, headers=other)
        assert r.status_code == 404 and r.json()["error"] == "not_found", (path, r.text)
    outcome = {"request_id": rid, "ran": True, "result": "deleted"}
    r = await http.post(f"{AGENT}/outcomes", json=outcome, headers=keyed(SUPPORT, "o-1"))
    assert r.status_code == 404
    # reusing its id for a request of one's own is refused the same way
    r = await http.post(f"{AGENT}/requests", json={"call": call(), "request_id": rid}, headers=keyed(SUPPORT, "k"))
    assert r.status_code == 404
    listed = await http.get(f"{AGENT}/requests", headers=other)
    assert listed.json()["items"] == []
    assert queue.get(rid).status.value == "decided", "nothing the other agent sent changed it"
    assert [e.kind for e in queue.events(request_id=rid)] == ["submitted", "decided"]


async def test_another_agents_parked_run_and_its_state_do_not_exist_for_it(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http, BILLING)).json()["request"]["id"]
    park = {"framework": "openai-agents", "run": "run-1", "request_ids": [rid], "state": "SECRET-SDK-STATE"}
    parked = (await http.post(f"{AGENT}/parked", json=park, headers=keyed(BILLING, "p-1"))).json()
    other = bearer(SUPPORT)
    for method, path, body in (
        ("GET", f"/parked/{parked['id']}", None),
        ("GET", f"/parked/{parked['id']}/ready", None),
        ("POST", f"/parked/{parked['id']}/claim", {"owner": "thief"}),
        ("POST", f"/parked/{parked['id']}/finish", {"owner": "thief"}),
    ):
        r = await http.request(method, f"{AGENT}{path}", json=body, headers=other)
        assert r.status_code == 404 and "SECRET" not in r.text, (path, r.text)
    listed = await http.get(f"{AGENT}/parked", params={"status": ["parked", "resuming", "resumed"]}, headers=other)
    assert listed.json() == []
    # nor may it park a run over the other agent's request
    park_theirs = {**park, "state": "mine"}
    r = await http.post(f"{AGENT}/parked", json=park_theirs, headers=keyed(SUPPORT, "p-2"))
    assert r.status_code == 404
    assert [p.id for p in queue.parked_runs()] == [parked["id"]]
    assert queue.get_parked(parked["id"]).status.value == "parked"


async def test_the_reviewer_side_never_shows_a_parked_runs_state(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rid = (await ask(http, BILLING)).json()["request"]["id"]
    park = {"framework": "openai-agents", "run": "run-1", "request_ids": [rid], "state": "SECRET-SDK-STATE"}
    parked = await http.post(f"{AGENT}/parked", json=park, headers=keyed(BILLING, "p-1"))
    assert parked.status_code == 201
    login = await http.post("/login", data={"token": "alice-token-0001"})
    assert login.status_code == 303
    assert parked.json()["id"] in (await http.get("/runs?view=open")).text, "the page lists the run, not its state"
    for path in ("/runs", "/runs?view=open", f"/requests/{rid}", "/"):
        page = await http.get(path)
        assert page.status_code == 200 and "SECRET-SDK-STATE" not in page.text, path
    for path in ("/api/requests", f"/api/requests/{rid}", f"/api/requests/{rid}/events", "/api/events"):
        r = await http.get(path, headers=reviewer())
        assert r.status_code == 200 and "SECRET-SDK-STATE" not in r.text, path


async def test_an_aap_instance_credential_is_an_agent_credential_here(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    made = await http.post("/aap/v1/instances", json={"instance_name": "laptop"}, headers=keyed(PROVISIONER, "prov-1"))
    token, iid = made.json()["credential"]["token"], made.json()["instance"]["id"]
    created = await ask(http, token)
    assert created.status_code == 201
    rid = created.json()["request"]["id"]
    assert created.json()["request"]["call"]["context"]["crossgate_agent"]["id"] == iid
    assert (await http.get(f"{AGENT}/requests/{rid}", headers=bearer(BILLING))).status_code == 404
    kept = (await ask(http, BILLING, key="other")).json()["request"]["id"]
    deleted = await http.delete(f"/aap/v1/instances/{iid}", headers=bearer(PROVISIONER))
    assert deleted.status_code == 204
    r = await http.get(f"{AGENT}/requests/{rid}", headers=bearer(token))
    assert r.status_code == 401, "a deleted instance's credential is refused"
    assert queue.get(rid).status.value == "cancelled", "and what it was waiting for is cancelled"
    assert queue.get(rid).closed_reason == "The AAP instance that made this request was deleted."
    assert queue.get(kept).status.value == "pending", "another credential's request stays"


async def test_what_an_agent_claims_in_the_context_does_not_make_it_anyone_else(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    forged = {**call(), "context": {"crossgate_agent": {"id": "someone-else", "name": "support-bot"}}}
    r = await http.post(f"{AGENT}/requests", json={"call": forged}, headers=keyed(BILLING, "k"))
    stamp = r.json()["request"]["call"]["context"]["crossgate_agent"]
    assert stamp["name"] == "billing-bot" and stamp["id"] != "someone-else"
    rid = r.json()["request"]["id"]
    assert (await http.get(f"{AGENT}/requests/{rid}", headers=bearer(SUPPORT))).status_code == 404
    [submitted] = queue.events(request_id=rid)
    assert (submitted.actor, submitted.channel) == ("billing-bot", "agent-api")

"""The review API's cancellation and parked runs (what ``crossgate cancel`` and ``crossgate runs`` use)."""

from __future__ import annotations

import httpx

from crossgate import ReviewQueue
from crossgate.model import CANCEL_MESSAGE, ParkedRunStatus, RequestStatus
from tests.server.conftest import TOKENS, auth, submit
from tests.server.test_runs_page import failed_run


async def test_cancel_closes_a_pending_request_as_the_reviewer(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    response = await client.post(
        f"/api/requests/{request.id}/cancel", json={"reason": "Not needed."}, headers=auth("alice")
    )
    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["closed_reason"]) == ("cancelled", "Not needed.")
    [event] = [e for e in queue.events(request_id=request.id) if e.kind == "cancelled"]
    assert event.actor == "alice"
    other = submit(queue, args={"id": "t2"})
    default = await client.post(f"/api/requests/{other.id}/cancel", headers=auth("alice"))
    assert default.json()["closed_reason"] == CANCEL_MESSAGE


async def test_cancel_refusals_have_the_documented_bodies(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)  # openai-agents: outside bob's scope
    out = await client.post(f"/api/requests/{request.id}/cancel", headers=auth("bob"))
    assert out.status_code == 403 and out.json()["error"] == "forbidden" and "out of scope" in out.json()["message"]
    blank = await client.post(f"/api/requests/{request.id}/cancel", json={"reason": " "}, headers=auth("alice"))
    assert blank.status_code == 422 and blank.json()["error"] == "invalid_decision"
    assert queue.get(request.id).status is RequestStatus.PENDING
    await client.post(f"/api/requests/{request.id}/cancel", headers=auth("alice"))
    again = await client.post(f"/api/requests/{request.id}/cancel", headers=auth("alice"))
    assert again.json() == {
        "error": "request_cancelled",
        "message": f"request {request.id} was cancelled",
        "status": 409,
    }
    missing = await client.post("/api/requests/req_missing/cancel", headers=auth("alice"))
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    assert (await client.post(f"/api/requests/{request.id}/cancel")).status_code == 401


async def test_runs_are_listed_and_shown_without_their_sdk_state(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    failed = failed_run(queue)
    waiting_request = submit(queue, args={"id": "t2"}, run="run-2")
    waiting = queue.park(framework="openai-agents", run="run-2", request_ids=[waiting_request.id], state="{}x")
    listed = (await client.get("/api/runs", headers=auth("bob"))).json()["items"]
    assert [(r["id"], r["status"], r["state_bytes"]) for r in listed] == [
        (failed.id, "failed", 10),
        (waiting.id, "parked", 3),
    ]
    only = await client.get("/api/runs", params={"status": "failed", "framework": "langgraph"}, headers=auth("bob"))
    assert [r["id"] for r in only.json()["items"]] == [failed.id]
    shown = (await client.get(f"/api/runs/{failed.id}", headers=auth("bob"))).json()
    assert shown["parked_run"]["outcome"] == "boom: db gone"
    assert [r["id"] for r in shown["requests"]] == list(failed.request_ids)
    assert shown["applied_without_outcome"] == []
    everything = str(listed) + str(shown)
    assert "sdk" not in everything and '"state"' not in everything  # the state is the resumer's alone
    missing = await client.get("/api/runs/park_missing", headers=auth("bob"))
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    bad = await client.get("/api/runs", params={"status": "asleep"}, headers=auth("bob"))
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"


async def test_retry_over_the_api_needs_scope_and_a_failed_run(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    theirs = failed_run(queue, framework="openai-agents")
    out = await client.post(f"/api/runs/{theirs.id}/retry", headers=auth("bob"))  # bob decides langgraph only
    assert out.status_code == 403 and out.json()["error"] == "forbidden"
    assert queue.get_parked(theirs.id).status is ParkedRunStatus.FAILED
    retried = await client.post(f"/api/runs/{theirs.id}/retry", headers=auth("alice"))
    assert retried.status_code == 200 and retried.json()["status"] == "parked" and "state" not in retried.json()
    again = await client.post(f"/api/runs/{theirs.id}/retry", headers=auth("alice"))
    assert again.status_code == 409 and "only a failed run can be retried" in again.json()["message"]
    assert any(e.kind == "run_retried" and e.actor == "alice" for e in queue.events())


async def test_the_cli_channel_is_recorded_only_for_a_bearer_token(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    by_cli, by_page = submit(queue), submit(queue, args={"id": "t2"})
    cli = {**auth("alice"), "X-Crossgate-Channel": "cli"}
    decided = await client.post(f"/api/requests/{by_cli.id}/decision", json={"kind": "approve"}, headers=cli)
    assert decided.json()["decision"]["channel"] == "cli"
    assert (await client.get("/api/me", headers=cli)).json()["channel"] == "cli"
    odd = {**auth("alice"), "X-Crossgate-Channel": "web"}  # no other channel can be claimed
    assert (await client.get("/api/me", headers=odd)).json()["channel"] == "api"
    await client.get("/login", params={"token": TOKENS["alice"]})
    paged = await client.post(
        f"/api/requests/{by_page.id}/decision", json={"kind": "approve"}, headers={"X-Crossgate-Channel": "cli"}
    )
    assert paged.json()["decision"]["channel"] == "web"  # a page session stays the page's

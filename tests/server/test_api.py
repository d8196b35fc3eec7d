"""The JSON API against the real app (httpx ASGI transport): every endpoint and every error code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from crossgate import MemoryStore, PolicyRule, ReviewQueue, ToolCall, VerdictKind, fingerprint
from crossgate.errors import StoreError
from crossgate.model import RequestStatus
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from tests.server.conftest import POLICY, auth, submit


async def test_health_is_public_and_counts_pending(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    submit(queue)
    response = await client.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["pending"] == 1
    assert body["store"] == "MemoryStore"


async def test_me_names_reviewer_scope_and_channel(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/me", headers=auth("bob"))
    assert response.json() == {"name": "bob", "scope": "frameworks langgraph", "channel": "api"}


async def test_list_filters_and_pages(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    ids = [
        submit(queue, framework=fw, args={"id": f"t{i}"}).id for i, fw in enumerate(["openai-agents", "langgraph"] * 3)
    ]
    page = (await client.get("/api/requests", params={"limit": 4}, headers=auth("alice"))).json()
    assert [r["id"] for r in page["items"]] == ids[::-1][:4]
    rest = (
        await client.get("/api/requests", params={"limit": 4, "cursor": page["next_cursor"]}, headers=auth("alice"))
    ).json()
    assert [r["id"] for r in rest["items"]] == ids[::-1][4:]
    assert rest["next_cursor"] is None
    only = (
        await client.get("/api/requests", params={"framework": "langgraph", "order": "oldest"}, headers=auth("alice"))
    ).json()
    assert [r["id"] for r in only["items"]] == ids[1::2]
    none = (await client.get("/api/requests", params={"status": "decided"}, headers=auth("alice"))).json()
    assert none["items"] == []


async def test_list_marks_what_the_caller_may_decide(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    submit(queue, framework="openai-agents")
    item = (await client.get("/api/requests", headers=auth("bob"))).json()["items"][0]
    assert item["can_decide"] is False
    assert "bob may decide frameworks langgraph" in item["decide_blocked"]


async def test_get_one_and_unknown(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    response = await client.get(f"/api/requests/{request.id}", headers=auth("alice"))
    assert response.status_code == 200
    body = response.json()
    assert body["call"]["tool"] == "delete_ticket"
    assert body["reason"] == "Deleting a ticket cannot be undone."
    assert body["can_decide"] is True
    missing = await client.get("/api/requests/req_nope", headers=auth("alice"))
    assert missing.status_code == 404
    assert missing.json() == {"error": "not_found", "message": "no request with id 'req_nope'", "status": 404}


async def test_decision_schema_lists_the_allowed_answers(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    response = await client.get(f"/api/requests/{request.id}/decision-schema", headers=auth("alice"))
    assert response.status_code == 200
    kinds = [branch["properties"]["kind"]["const"] for branch in response.json()["oneOf"]]
    assert kinds == [k.value for k in request.allowed_decisions]
    missing = await client.get("/api/requests/req_nope/decision-schema", headers=auth("alice"))
    assert missing.status_code == 404
    anonymous = await client.get(f"/api/requests/{request.id}/decision-schema")
    assert anonymous.status_code == 401


async def test_approve_records_reviewer_and_channel(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    body = {"kind": "approve", "fingerprint": request.fingerprint, "note": "checked"}
    response = await client.post(f"/api/requests/{request.id}/decision", json=body, headers=auth("alice"))
    assert response.status_code == 200, response.text
    stored = queue.get(request.id)
    assert stored.status is RequestStatus.DECIDED
    assert stored.decision is not None
    assert (stored.decision.kind, stored.decision.reviewer, stored.decision.channel) == ("approve", "alice", "api")
    decided = [e for e in queue.events(request_id=request.id) if e.kind == "decided"]
    assert decided[0].actor == "alice"
    assert decided[0].channel == "api"


async def test_second_decision_is_409_and_changes_nothing(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    url = f"/api/requests/{request.id}/decision"
    assert (await client.post(url, json={"kind": "approve"}, headers=auth("alice"))).status_code == 200
    second = await client.post(url, json={"kind": "reject", "message": "no"}, headers=auth("alice"))
    assert second.status_code == 409
    assert second.json()["error"] == "already_decided"
    decision = queue.get(request.id).decision
    assert decision is not None
    assert decision.kind == "approve"


async def test_expired_request_is_409(settings: ServerSettings) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    policy = POLICY.with_rules(PolicyRule(name="quick", verdict=VerdictKind.ASK, tool="wipe_*", timeout_seconds=60))
    queue = ReviewQueue(MemoryStore(), policy, clock=lambda: now[0])
    request = submit(queue, tool="wipe_disk", args={"id": "d1"}, schema=None)
    assert request.expires_at == now[0] + timedelta(seconds=60)
    now[0] += timedelta(seconds=61)
    app = create_app(queue, settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        url = f"/api/requests/{request.id}/decision"
        response = await client.post(url, json={"kind": "approve"}, headers=auth("alice"))
        assert response.status_code == 409
        assert response.json()["error"] == "request_expired"
        assert queue.get(request.id).decision is None
        queue.expire_overdue()
        again = await client.post(url, json={"kind": "approve"}, headers=auth("alice"))
        assert again.status_code == 409
        assert queue.get(request.id).status is RequestStatus.EXPIRED
    queue.close()


async def test_invalid_decisions_are_422_and_change_nothing(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    url = f"/api/requests/{request.id}/decision"
    cases = [
        ({"kind": "edit", "args": {"id": 5}}, "invalid_arguments"),
        ({"kind": "edit", "args": {"id": "t1", "extra": True}}, "invalid_arguments"),
        ({"kind": "reject", "message": ""}, "invalid_request"),
        ({"kind": "approve", "fingerprint": "0" * 64}, "fingerprint_mismatch"),
        ({"kind": "maybe"}, "invalid_request"),
        ({"kind": "approve", "reviewer": "mallory"}, "invalid_request"),
        ({"kind": "respond", "content": "x", "remember": {"scope": "forever"}}, "invalid_decision"),
    ]
    for body, code in cases:
        response = await client.post(url, json=body, headers=auth("alice"))
        assert response.status_code == 422, (body, response.text)
        assert response.json()["error"] == code, (body, response.text)
    not_json = await client.post(url, content=b"{nope", headers={**auth("alice"), "content-type": "application/json"})
    assert not_json.status_code == 422
    assert queue.get(request.id).status is RequestStatus.PENDING
    assert [e.kind for e in queue.events(request_id=request.id)] == ["submitted"]


async def test_decision_not_allowed_is_422(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, capabilities=("approve", "reject"))
    response = await client.post(
        f"/api/requests/{request.id}/decision", json={"kind": "edit", "args": {"id": "t2"}}, headers=auth("alice")
    )
    assert response.status_code == 422
    assert response.json()["error"] == "decision_not_allowed"
    assert "allowed: approve, reject" in response.json()["message"]


async def test_edit_is_validated_and_recorded_with_diff(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, args={"id": "t1"})
    response = await client.post(
        f"/api/requests/{request.id}/decision",
        json={"kind": "edit", "args": {"id": "t2", "reason": "dup"}},
        headers=auth("alice"),
    )
    assert response.status_code == 200
    assert queue.get(request.id).approved_args() == {"id": "t2", "reason": "dup"}
    decided = next(e for e in queue.events(request_id=request.id) if e.kind == "decided")
    assert decided.payload["diff"] == {"changed": {"id": ["t1", "t2"]}, "added": {"reason": "dup"}, "removed": {}}


async def test_an_edit_into_a_denied_call_is_422_and_changes_nothing(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    denied = {"id": "t9"}
    queue.add_rule(
        queue.new_rule(
            effect="deny",
            tool="delete_ticket",
            match="exact",
            args_fingerprint=fingerprint("delete_ticket", denied),
            message="t9 belongs to a live customer.",
        )
    )
    request = submit(queue, args={"id": "t1"})
    head = queue.store.audit_head()
    response = await client.post(
        f"/api/requests/{request.id}/decision", json={"kind": "edit", "args": denied}, headers=auth("alice")
    )
    assert response.status_code == 422
    assert response.json()["error"] == "decision_not_allowed"
    assert "t9 belongs to a live customer." in response.json()["message"]
    assert queue.get(request.id).is_open and queue.store.audit_head() == head


async def test_remember_adds_a_standing_rule(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    body = {"kind": "approve", "remember": {"scope": "run", "match": "tool"}}
    assert (
        await client.post(f"/api/requests/{request.id}/decision", json=body, headers=auth("alice"))
    ).status_code == 200
    rules = (await client.get("/api/rules", headers=auth("alice"))).json()["items"]
    assert len(rules) == 1
    assert (rules[0]["tool"], rules[0]["scope"], rules[0]["run"], rules[0]["created_by"]) == (
        "delete_ticket",
        "run",
        "run-1",
        "alice",
    )


async def test_rules_add_list_revoke(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    created = await client.post("/api/rules", json={"effect": "allow", "tool": "archive_*"}, headers=auth("alice"))
    assert created.status_code == 201, created.text
    rule_id = created.json()["id"]
    assert queue.evaluate(ToolCall(framework="langgraph", tool="archive_ticket")).kind == "allow"
    revoked = await client.delete(f"/api/rules/{rule_id}", headers=auth("alice"))
    assert revoked.status_code == 200
    assert revoked.json()["revoked_by"] == "alice"
    assert queue.evaluate(ToolCall(framework="langgraph", tool="archive_ticket")).kind == "ask"
    again = await client.delete(f"/api/rules/{rule_id}", headers=auth("alice"))
    assert again.status_code == 409
    assert (await client.delete("/api/rules/rule_nope", headers=auth("alice"))).status_code == 404
    listed = (await client.get("/api/rules", params={"include_revoked": True}, headers=auth("alice"))).json()["items"]
    assert [r["id"] for r in listed] == [rule_id]
    assert (await client.get("/api/rules", headers=auth("alice"))).json()["items"] == []


async def test_bad_rules_are_422(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    for body in (
        {"effect": "ask", "tool": "x"},
        {"effect": "allow", "tool": "x", "match": "exact"},
        {"effect": "allow", "tool": "x", "match": "pattern"},
        {"effect": "allow", "tool": "x", "scope": "run"},
        {"effect": "allow", "tool": "x", "scope": "once"},
        {"effect": "allow", "tool": ""},
    ):
        response = await client.post("/api/rules", json=body, headers=auth("alice"))
        assert response.status_code == 422, (body, response.text)
    assert queue.rules(include_revoked=True) == []


async def test_events_and_audit_verify(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    await client.post(f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("alice"))
    events = (await client.get("/api/events", headers=auth("alice"))).json()
    assert [e["kind"] for e in events] == ["submitted", "decided"]
    after = (await client.get("/api/events", params={"after": 1}, headers=auth("alice"))).json()
    assert [e["seq"] for e in after] == [2]
    per_request = (await client.get(f"/api/requests/{request.id}/events", headers=auth("alice"))).json()
    assert [e["kind"] for e in per_request] == ["submitted", "decided"]
    assert (await client.get("/api/requests/req_x/events", headers=auth("alice"))).status_code == 404
    report = (await client.get("/api/audit/verify", headers=auth("alice"))).json()
    assert report == {"ok": True, "checked": 2, "problem": None, "bad_seq": None}


async def test_audit_verify_reports_tampering(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    submit(queue)
    store = queue.store
    first = store._events[0]
    store._events[0] = first.model_copy(update={"actor": "mallory"})
    report = (await client.get("/api/audit/verify", headers=auth("alice"))).json()
    assert report["ok"] is False
    assert report["bad_seq"] == 1


async def test_bad_query_values_are_422(client: httpx.AsyncClient) -> None:
    for params in ({"limit": 0}, {"limit": 501}, {"cursor": "!!"}, {"status": "maybe"}, {"order": "sideways"}):
        response = await client.get("/api/requests", params=params, headers=auth("alice"))
        assert response.status_code == 422, (params, response.text)
        assert set(response.json()) == {"error", "message", "status"}
    assert (await client.get("/api/events", params={"after": -1}, headers=auth("alice"))).status_code == 422


async def test_unexpected_failure_is_a_json_500_without_details(queue: ReviewQueue, settings: ServerSettings) -> None:
    def broken() -> None:
        raise RuntimeError("secret internals")

    queue.verify_audit = broken  # type: ignore[method-assign]
    app = create_app(queue, settings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.get("/api/audit/verify", headers=auth("alice"))
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error", "message": "the server failed; see its log", "status": 500}


async def test_store_failure_is_503(queue: ReviewQueue, settings: ServerSettings) -> None:
    def broken() -> None:
        raise StoreError("database is locked")

    queue.verify_audit = broken  # type: ignore[method-assign]
    app = create_app(queue, settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        response = await client.get("/api/audit/verify", headers=auth("alice"))
    assert response.status_code == 503
    assert response.json()["error"] == "store"

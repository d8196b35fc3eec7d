"""AAP requests in process: create, replay, conflict, long poll, cancel, the decision mapping."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx

from crossgate import ReviewQueue
from tests.server.aap.conftest import AAP, SERVICE, bearer, call, create, provision, reviewer


async def decide(http: httpx.AsyncClient, request_id: str, decision: dict[str, object]) -> None:
    r = await http.post(f"/api/requests/{request_id}/decision", json=decision, headers=reviewer())
    assert r.status_code == 200, r.text


async def test_create_is_a_pending_crossgate_request_with_the_instance_as_agent(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    iid, token = await provision(http)
    r = await create(http, token, call())
    assert r.status_code == 201
    body = r.json()
    assert body["status"] == "pending" and "decision" not in body
    assert uuid.UUID(r.headers["x-request-id"])
    stored = queue.get(body["id"])
    assert (stored.call.framework, stored.call.agent, stored.call.run) == ("aap", iid, iid)
    assert stored.call.args == {"id": "t1"}


async def test_replay_returns_the_request_and_a_changed_body_is_an_idempotency_conflict(
    http: httpx.AsyncClient,
) -> None:
    _, token = await provision(http)
    first = await create(http, token, call(), key="same")
    again = await create(http, token, call(), key="same")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other = await create(http, token, call(id="t2"), key="same")
    assert other.status_code == 409
    error = other.json()["error"]
    assert error["code"] == "idempotency_conflict" and error["type"] == "conflict"
    assert error["request_id"] == other.headers["x-request-id"]


async def test_missing_idempotency_key_and_bad_body_are_400(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    _, token = await provision(http)
    r = await http.post(f"{AAP}/requests", json=call(), headers=bearer(token))
    assert r.status_code == 400 and r.json()["error"]["code"] == "idempotency_key_required"
    r = await create(http, token, {**call(), "timeout": "ten minutes"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "timeout"
    r = await create(http, token, {**call(), "extra": 1}, key="c-2")
    assert r.status_code == 400
    assert queue.list_requests().items == []


async def test_long_poll_is_woken_by_the_decision(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    poll = asyncio.create_task(http.get(f"{AAP}/requests/{rid}?wait=30s", headers=bearer(token)))
    await asyncio.sleep(0.2)
    assert not poll.done()
    await decide(http, rid, {"kind": "approve", "note": "fine"})
    r = await asyncio.wait_for(poll, 10)
    decision = r.json()["decision"]
    assert r.json()["status"] == "approved" and decision["note"] == "fine"
    assert decision["expires_at"] > decision["decided_at"]


async def test_wait_that_ends_returns_pending(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    r = await http.get(f"{AAP}/requests/{rid}?wait=1s", headers=bearer(token))
    assert r.status_code == 200 and r.json()["status"] == "pending"
    r = await http.get(f"{AAP}/requests/{rid}?wait=0s", headers=bearer(token))
    assert r.status_code == 400


async def test_reject_is_denied_with_the_message_as_note(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    await decide(http, rid, {"kind": "reject", "message": "Close t1 instead of deleting it."})
    r = await http.get(f"{AAP}/requests/{rid}", headers=bearer(token))
    assert r.json()["status"] == "denied"
    assert r.json()["decision"]["note"] == "Close t1 instead of deleting it."
    assert "expires_at" not in r.json()["decision"]


async def test_respond_is_denied_with_the_answer_as_note(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    await decide(http, rid, {"kind": "respond", "content": "t1 is already gone"})
    r = await http.get(f"{AAP}/requests/{rid}", headers=bearer(token))
    assert r.json()["status"] == "denied" and "t1 is already gone" in r.json()["decision"]["note"]


async def test_edit_is_denied_and_pre_approves_exactly_the_edited_call_once(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    iid, token = await provision(http)
    other_iid, other = await provision(http, "other", key="k-2")
    rid = (await create(http, token, call())).json()["id"]
    await decide(http, rid, {"kind": "edit", "args": {"id": "t1", "reason": "duplicate"}})
    r = await http.get(f"{AAP}/requests/{rid}", headers=bearer(token))
    note = r.json()["decision"]["note"]
    assert (
        r.json()["status"] == "denied"
        and json.dumps({"id": "t1", "reason": "duplicate"}, separators=(",", ":")) in note
    )
    # another instance's identical call is not pre-approved; nor is a different call of this instance
    assert (await create(http, other, call(id="t1", reason="duplicate"), key="o")).json()["status"] == "pending"
    assert (await create(http, token, call(id="t9"), key="x")).json()["status"] == "pending"
    retry = await create(http, token, call(id="t1", reason="duplicate"), key="retry")
    assert retry.status_code == 201 and retry.json()["status"] == "approved"
    assert "expires_at" in retry.json()["decision"]
    again = await create(http, token, call(id="t1", reason="duplicate"), key="retry-2")
    assert again.json()["status"] == "pending"  # once only
    assert other_iid != iid


async def test_remember_becomes_a_standing_rule_for_the_agent(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    remember = {"scope": "forever", "match": "tool", "this_agent_only": True}
    await decide(http, rid, {"kind": "reject", "message": "Never delete tickets.", "remember": remember})
    later = await create(http, token, call(id="t5"), key="later")
    assert later.json()["status"] == "denied" and later.json()["decision"]["note"]


async def test_policy_allow_and_deny_answer_at_once(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    allowed = (await create(http, token, call("read_ticket"), key="a")).json()
    assert allowed["status"] == "approved" and "expires_at" in allowed["decision"]
    denied = (await create(http, token, call("drop_table"), key="d")).json()
    assert denied["status"] == "denied" and "never allowed" in denied["decision"]["note"]


async def test_cancel_ends_a_pending_request_and_a_decided_one_is_already_terminal(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    poll = asyncio.create_task(http.get(f"{AAP}/requests/{rid}?wait=30s", headers=bearer(token)))
    await asyncio.sleep(0.2)
    r = await http.delete(f"{AAP}/requests/{rid}", headers=bearer(token))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert (await asyncio.wait_for(poll, 10)).json()["status"] == "cancelled"
    assert (await http.delete(f"{AAP}/requests/{rid}", headers=bearer(token))).json()["status"] == "cancelled"
    assert queue.get(rid).status.value == "cancelled"
    rid2 = (await create(http, token, call(id="t2"), key="c-2")).json()["id"]
    await decide(http, rid2, {"kind": "approve"})
    r = await http.delete(f"{AAP}/requests/{rid2}", headers=bearer(token))
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_terminal"


async def test_consume_once_then_already_consumed(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    r = await http.post(f"{AAP}/requests/{rid}/consume", headers={**bearer(token), "Idempotency-Key": "u1"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_approved"
    await decide(http, rid, {"kind": "approve"})
    r = await http.post(f"{AAP}/requests/{rid}/consume", headers={**bearer(token), "Idempotency-Key": "u1"})
    assert r.status_code == 200 and "consumed_at" in r.json()["consumption"]
    assert queue.get(rid).status.value == "applied"
    r = await http.post(f"{AAP}/requests/{rid}/consume", headers={**bearer(token), "Idempotency-Key": "u2"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_consumed"


async def test_service_agent_from_the_tokens_file_is_an_instance(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    r = await create(http, SERVICE, call())
    assert r.status_code == 201
    assert queue.get(r.json()["id"]).call.context["aap_instance"] == "billing-bot"


async def test_every_aap_error_is_an_error_response_with_a_request_id(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    for method, path in (("GET", f"{AAP}/requests/%0A"), ("PUT", f"{AAP}/requests"), ("GET", f"{AAP}/nothing")):
        r = await http.request(method, path, headers=bearer(token))
        assert r.status_code in (404, 405), (path, r.status_code)
        assert r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["request_id"] == r.headers["x-request-id"]

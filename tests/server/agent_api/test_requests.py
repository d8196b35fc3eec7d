"""The agent API's request routes: the same policy, queue and audit as any request, with idempotency keys."""

from __future__ import annotations

import asyncio
import time

import httpx

from crossgate import Approve, Edit, ReviewQueue, open_store
from crossgate.server.app import create_app
from tests.server.agent_api.conftest import AGENT, BILLING, SUPPORT, agent_settings, ask, bearer, call, keyed
from tests.server.conftest import POLICY


async def test_an_ask_is_a_pending_request_on_the_queue_recorded_as_the_credential(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    r = await ask(http, requested_by="pat", description="spam ticket")
    assert r.status_code == 201
    body = r.json()
    assert body["verdict"]["kind"] == "ask" and body["stored"] is True
    request = queue.get(body["request"]["id"])
    assert request.status.value == "pending" and request.requested_by == "pat"
    assert request.description == "spam ticket" and request.reason == "Deleting a ticket cannot be undone."
    [submitted] = queue.events(request_id=request.id)
    assert (submitted.actor, submitted.channel) == ("billing-bot", "agent-api")
    assert [p.id for p in queue.pending()] == [request.id], "reviewers see it like any other"


async def test_allow_and_deny_come_back_at_once_and_store_no_request(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    allowed = await http.post(f"{AGENT}/requests", json={"call": call("read_ticket")}, headers=keyed(BILLING, "a"))
    denied = await http.post(f"{AGENT}/requests", json={"call": call("drop_table")}, headers=keyed(BILLING, "d"))
    assert allowed.json()["verdict"]["kind"] == "allow" and allowed.json()["request"] is None
    assert denied.json()["verdict"]["kind"] == "deny"
    assert denied.json()["verdict"]["reason"] == "Dropping tables is never allowed."
    assert queue.pending() == []
    kinds = [(e.kind, e.actor, e.channel) for e in queue.events()]
    assert kinds == [("auto_allowed", "policy", "agent-api"), ("auto_denied", "policy", "agent-api")]
    verdict = await http.post(f"{AGENT}/evaluate", json={"call": call("drop_table")}, headers=bearer(BILLING))
    assert verdict.json()["kind"] == "deny" and len(queue.events()) == 2, "evaluate records nothing"


async def test_the_same_key_and_body_replay_the_request_and_another_body_is_a_409(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    first = await ask(http, key="k-1")
    again = await ask(http, key="k-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.headers["idempotent-replay"] == "true" and "idempotent-replay" not in first.headers
    assert again.json()["request"]["id"] == first.json()["request"]["id"]
    other = await http.post(f"{AGENT}/requests", json={"call": call(id="t2")}, headers=keyed(BILLING, "k-1"))
    assert other.status_code == 409 and other.json()["error"] == "idempotency_conflict"
    assert len(queue.pending()) == 1 and [e.kind for e in queue.events()] == ["submitted"]
    # the key is the caller's own: another agent's same key is another request
    theirs = await ask(http, SUPPORT, key="k-1")
    assert theirs.status_code == 201 and theirs.json()["request"]["id"] != first.json()["request"]["id"]


async def test_concurrent_retries_of_one_key_create_one_request(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    answers = await asyncio.gather(*(ask(http, key="same") for _ in range(8)))
    assert sorted(r.status_code for r in answers) == [200] * 7 + [201]
    assert len({r.json()["request"]["id"] for r in answers}) == 1
    assert len(queue.pending()) == 1


async def test_a_replay_after_a_restart_finds_the_request_in_the_store(tmp_path: object) -> None:
    db = f"{tmp_path}/q.db"
    answers = []
    for _ in range(2):  # two server lives on one store; the second has no memory of the key
        queue = ReviewQueue(open_store(db), POLICY)
        app = create_app(queue, agent_settings())
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            answers.append(await ask(client, key="k-9", request_id="req-own-id"))
            answers.append(await ask(client, key="k-10"))
            if len(answers) == 4:
                changed = {"call": call(id="t9"), "request_id": "req-own-id"}
                conflict = await client.post(f"{AGENT}/requests", json=changed, headers=keyed(BILLING, "k-9"))
                assert conflict.status_code == 409
                assert len(queue.pending()) == 2
        queue.close()
    assert [r.status_code for r in answers] == [201, 201, 200, 200]
    assert answers[2].headers["idempotent-replay"] == "true"
    assert answers[0].json()["request"]["id"] == answers[2].json()["request"]["id"] == "req-own-id"
    assert answers[1].json()["request"]["id"] == answers[3].json()["request"]["id"], "the derived id is stable"


async def test_a_long_poll_returns_when_the_reviewer_decides(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rid = (await ask(http)).json()["request"]["id"]

    async def decide_soon() -> None:
        await asyncio.sleep(0.3)
        await asyncio.to_thread(queue.decide, rid, Approve(), reviewer="alice")

    started = time.monotonic()
    decider = asyncio.create_task(decide_soon())
    r = await http.get(f"{AGENT}/requests/{rid}", params={"wait": 20}, headers=bearer(BILLING))
    await decider
    assert r.status_code == 200 and r.json()["status"] == "decided"
    assert r.json()["decision"]["kind"] == "approve" and r.json()["decision"]["reviewer"] == "alice"
    assert 0.25 < time.monotonic() - started < 10


async def test_a_long_poll_ends_with_the_request_still_pending_and_is_cut_to_30_seconds(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    started = time.monotonic()
    r = await http.get(f"{AGENT}/requests/{rid}", params={"wait": 0.3}, headers=bearer(BILLING))
    assert r.json()["status"] == "pending" and 0.25 < time.monotonic() - started < 5
    for bad in ("-1", "soon", "nan", "inf"):
        r = await http.get(f"{AGENT}/requests/{rid}", params={"wait": bad}, headers=bearer(BILLING))
        assert r.status_code == 422, bad
    queue.decide(rid, Approve(), reviewer="alice")
    r = await http.get(f"{AGENT}/requests/{rid}", params={"wait": 3600}, headers=bearer(BILLING))
    assert r.json()["status"] == "decided", "a decided request answers at once, whatever the wait"


async def test_applied_exactly_once_with_the_approved_arguments_then_the_outcome(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    pending = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t1"}}, headers=bearer(BILLING))
    assert pending.status_code == 409 and pending.json()["error"] == "conflict", "nothing runs while pending"
    queue.decide(rid, Edit(args={"id": "t2"}), reviewer="alice")
    wrong = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t1"}}, headers=bearer(BILLING))
    assert wrong.status_code == 422 and wrong.json()["error"] == "fingerprint_mismatch"
    assert queue.get(rid).status.value == "decided"
    ok = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t2"}}, headers=bearer(BILLING))
    assert ok.status_code == 200 and ok.json()["status"] == "applied"
    twice = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t2"}}, headers=bearer(BILLING))
    assert twice.status_code == 409 and twice.json()["error"] == "already_applied"
    none = await http.get(f"{AGENT}/requests/{rid}/outcome", headers=bearer(BILLING))
    assert none.status_code == 404 and none.json()["error"] == "no_outcome"
    outcome = {"request_id": rid, "ran": True, "result": "deleted t2"}
    recorded = await http.post(f"{AGENT}/outcomes", json=outcome, headers=keyed(BILLING, "o-1"))
    replayed = await http.post(f"{AGENT}/outcomes", json=outcome, headers=keyed(BILLING, "o-1"))
    assert (recorded.status_code, replayed.status_code) == (204, 204)
    assert replayed.headers["idempotent-replay"] == "true"
    event = (await http.get(f"{AGENT}/requests/{rid}/outcome", headers=bearer(BILLING))).json()
    assert event["payload"] == {"ran": True, "result": "deleted t2", "error": None}
    assert (event["actor"], event["channel"]) == ("billing-bot", "agent-api")
    kinds = [e.kind for e in queue.events(request_id=rid)]
    assert kinds == ["submitted", "decided", "applied", "ran"], "one applied, one outcome"


async def test_a_retried_applied_with_its_key_is_answered_again_not_refused(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    queue.decide(rid, Approve(), reviewer="alice")
    headers = keyed(BILLING, "apply-1")
    first = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t1"}}, headers=headers)
    again = await http.post(f"{AGENT}/requests/{rid}/applied", json={"args": {"id": "t1"}}, headers=headers)
    assert (first.status_code, again.status_code) == (200, 200) and again.headers["idempotent-replay"] == "true"
    assert [e.kind for e in queue.events(request_id=rid)].count("applied") == 1


async def test_cancel_closes_the_request_and_the_sdk_reads_the_reason(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = (await ask(http)).json()["request"]["id"]
    r = await http.post(f"{AGENT}/requests/{rid}/cancel", json={"reason": "The user left."}, headers=bearer(BILLING))
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["closed_reason"] == "The user left."
    again = await http.post(f"{AGENT}/requests/{rid}/cancel", json={}, headers=bearer(BILLING))
    assert again.status_code == 409 and again.json()["error"] == "request_cancelled"
    blank = await http.post(f"{AGENT}/requests", json={"call": call(id="t5")}, headers=keyed(BILLING, "b"))
    bid = blank.json()["request"]["id"]
    r = await http.post(f"{AGENT}/requests/{bid}/cancel", json={"reason": "   "}, headers=bearer(BILLING))
    assert r.status_code == 422 and queue.get(bid).status.value == "pending"


async def test_listing_and_expiring_answer_only_with_the_callers_own(queue: ReviewQueue) -> None:
    app = create_app(queue, agent_settings(sweep_seconds=3600))  # no sweep: this agent's POST /expire does it
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        mine = (await ask(http, BILLING, key="m", timeout_seconds=0.1)).json()["request"]["id"]
        theirs = (await ask(http, SUPPORT, key="t", timeout_seconds=0.1)).json()["request"]["id"]
        listed = (await http.get(f"{AGENT}/requests", params={"status": "pending"}, headers=bearer(BILLING))).json()
        assert [r["id"] for r in listed["items"]] == [mine]
        await asyncio.sleep(0.2)
        expired = (await http.post(f"{AGENT}/expire", headers=bearer(BILLING))).json()
    assert [r["id"] for r in expired] == [mine]
    assert queue.get(theirs).status.value == "expired", "overdue is overdue, but only mine is reported to me"


async def test_prepare_stores_nothing_until_the_run_is_parked(http: httpx.AsyncClient, queue: ReviewQueue) -> None:
    r = await ask(http, store=False, request_id="req-later")
    assert r.status_code == 201 and r.json()["stored"] is False and r.json()["request"]["id"] == "req-later"
    assert queue.pending() == [] and queue.events() == []
    missing = await http.get(f"{AGENT}/requests/req-later", headers=bearer(BILLING))
    assert missing.status_code == 404


async def test_the_policy_is_served_with_its_version_and_revalidated(http: httpx.AsyncClient) -> None:
    r = await http.get(f"{AGENT}/policy", headers=bearer(BILLING))
    assert r.status_code == 200 and r.json()["document"] == POLICY.model_dump(mode="json")
    assert r.headers["etag"] == f'"{r.json()["version"]}"' and isinstance(r.json()["rules_version"], int)
    # a local policy: no signed version, and a gate does not hold it to the state head's
    assert r.json()["local"] is True and r.json()["policy_version"] is None
    same = await http.get(f"{AGENT}/policy", headers={**bearer(BILLING), "If-None-Match": r.headers["etag"]})
    assert same.status_code == 304 and same.content == b""
    stale = await http.get(f"{AGENT}/policy", headers={**bearer(BILLING), "If-None-Match": '"old"'})
    assert stale.status_code == 200

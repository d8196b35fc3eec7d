"""A rejected call reads ``rejected`` and ``not_run`` in the API, the stream, the page and the webhooks.

Before, it read ``applied`` and ``executed``, which a reviewer takes for "it ran". Old outcome events
(``executed``) are kept as written and read by the new names.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from crossgate import Approve, MemoryStore, Reject, ReviewQueue
from crossgate.model import NewEvent, Respond
from crossgate.server.settings import WebhookTarget
from crossgate.server.stream import event_summary
from tests.server.conftest import POLICY, TOKENS, auth, submit
from tests.server.live import Receiver
from tests.server.test_webhooks import serving, until


def _reject_and_tell(queue: ReviewQueue, message: str = "Keep t1: a customer needs it.") -> str:
    request = submit(queue)
    queue.decide(request.id, Reject(message=message), reviewer="alice", channel="api")
    queue.mark_applied(request.id, actor="worker")
    queue.record_outcome(request.id, ran=False, result=message)
    return request.id


@pytest.fixture
async def signed_in(client: httpx.AsyncClient) -> httpx.AsyncClient:
    await client.get("/login", params={"token": TOKENS["alice"]})
    return client


async def test_the_api_says_rejected_answered_and_applied(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    rejected = _reject_and_tell(queue)
    answered = submit(queue, args={"id": "t2"})
    queue.decide(answered.id, Respond(content="t2 was archived"), reviewer="alice")
    queue.mark_applied(answered.id, actor="worker")
    approved = submit(queue, args={"id": "t3"})
    queue.decide(approved.id, Approve(), reviewer="alice")
    queue.mark_applied(approved.id, args={"id": "t3"}, actor="worker")
    queue.record_outcome(approved.id, ran=True, result="deleted ticket t3")
    statuses = {
        rid: (await client.get(f"/api/requests/{rid}", headers=auth("alice"))).json()["status"]
        for rid in (rejected, answered.id, approved.id)
    }
    assert statuses == {rejected: "rejected", answered.id: "answered", approved.id: "applied"}
    listed = await client.get("/api/requests", params={"status": "rejected"}, headers=auth("alice"))
    assert [r["id"] for r in listed.json()["items"]] == [rejected]
    trail = (await client.get(f"/api/requests/{rejected}/events", headers=auth("alice"))).json()
    assert [(e["kind"], e["payload"].get("kind")) for e in trail] == [
        ("submitted", None),
        ("decided", "reject"),
        ("applied", "reject"),
        ("not_run", None),
    ]
    assert "executed" not in str([e["kind"] for e in (await client.get("/api/events", headers=auth("alice"))).json()])


def test_the_stream_sends_old_outcomes_by_their_new_names(queue: ReviewQueue) -> None:
    at = datetime(2026, 11, 30, tzinfo=UTC)
    for ran in (True, False):
        queue.store.append_event(NewEvent(kind="executed", at=at, payload={"ran": ran, "result": None, "error": None}))
    rid = _reject_and_tell(queue)
    summaries = [event_summary(e) for e in queue.events()]
    assert [s["kind"] for s in summaries] == ["ran", "not_run", "submitted", "decided", "applied", "not_run"]
    assert [s["decision"] for s in summaries if s["request_id"] == rid] == [None, "reject", "reject", None]


async def test_the_page_shows_a_rejected_call_as_rejected_and_not_run(
    signed_in: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    rid = _reject_and_tell(queue)
    page = (await signed_in.get(f"/requests/{rid}")).text
    assert '<span class="pill pill-rejected">rejected</span>' in page
    assert "pill-applied" not in page
    assert '<span class="ev-kind">not_run</span>' in page and "executed" not in page
    assert "the model read the rejection; nothing ran" in page
    assert 'id="ran-line">Did not run' in page
    history = (await signed_in.get("/history")).text
    assert 'class="ran ran-no"' in history


async def test_a_json_webhook_hears_not_run_and_a_legacy_executed_subscription_still_works() -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with Receiver() as receiver:
        target = WebhookTarget(url=receiver.url, events=("applied", "executed"))
        assert target.events == ("applied", "ran", "not_run"), "the old name stands for both outcomes"
        async with serving(queue, target):
            rid = _reject_and_tell(queue)
            await until(lambda: len(receiver.bodies) == 2)
    assert [b["event"] for b in receiver.bodies] == ["request.applied", "request.not_run"]
    assert {b["request"]["id"] for b in receiver.bodies} == {rid}
    assert {b["request"]["status"] for b in receiver.bodies} == {"rejected"}
    queue.close()


async def test_a_slack_webhook_says_the_call_did_not_run() -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with Receiver() as receiver:
        target = WebhookTarget(url=receiver.url, format="slack", events=("applied", "ran", "not_run"))
        async with serving(queue, target):
            submit_and_run = submit(queue, framework="langgraph", args={"id": "t2"})
            queue.decide(submit_and_run.id, Approve(), reviewer="alice")
            queue.mark_applied(submit_and_run.id, args={"id": "t2"}, actor="worker")
            queue.record_outcome(submit_and_run.id, ran=True, error="OSError: disk full")
            _reject_and_tell(queue)
            await until(lambda: len(receiver.bodies) == 4)
    assert [b["text"] for b in receiver.bodies] == [
        "delete_ticket from langgraph · support: the approval reached the agent, which runs the call",
        "delete_ticket from langgraph · support: it ran and failed: OSError: disk full",
        "delete_ticket from openai-agents · support: the model read the rejection; nothing ran",
        "delete_ticket from openai-agents · support: it did not run",
    ]
    queue.close()

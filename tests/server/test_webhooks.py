"""Webhooks on new, decided, expired and cancelled requests: JSON and Slack bodies, retries, a silent receiver."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from crossgate import Approve, ConfigurationError, MemoryStore, ReviewQueue
from crossgate.model import RequestStatus
from crossgate.server.app import create_app
from crossgate.server.settings import WebhookTarget
from crossgate.server.webhooks import json_body
from tests.server.conftest import POLICY, auth, make_settings, submit
from tests.server.live import Receiver


@asynccontextmanager
async def serving(queue: ReviewQueue, *targets: WebhookTarget, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    fields = {"webhooks": targets, "webhook_backoff_seconds": 0.05, "webhook_timeout_seconds": 1.0, **settings}
    app = create_app(queue, make_settings(**fields))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield http


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def fresh_queue() -> ReviewQueue:
    return ReviewQueue(MemoryStore(), POLICY)


async def test_json_notifications_for_new_and_decided_requests() -> None:
    queue = fresh_queue()
    with Receiver() as receiver:
        target = WebhookTarget(url=receiver.url, secret="hook-secret")
        async with serving(queue, target, link_reviewer="alice", base_url="http://testserver") as http:
            request = submit(queue)
            await until(lambda: len(receiver.bodies) == 1)
            new = receiver.bodies[0]
            assert new["event"] == "request.submitted"
            assert new["request"]["id"] == request.id
            assert new["request"]["call"]["args"] == {"id": "t1"}
            assert new["links"]["page"] == f"http://testserver/requests/{request.id}"
            signature = hmac.new(b"hook-secret", receiver.raw[0], hashlib.sha256).hexdigest()
            assert receiver.headers[0]["x-crossgate-signature"] == f"sha256={signature}"
            # the signed link in the notification decides, as alice, through channel "link"
            approved = await http.post(new["links"]["approve"].removeprefix("http://testserver"))
            assert approved.status_code == 200
            await until(lambda: len(receiver.bodies) == 2)
            decided = receiver.bodies[1]
            assert decided["event"] == "request.decided"
            assert (decided["actor"], decided["channel"]) == ("alice", "link")
            assert "approve" not in decided["links"], "a closed request's notification carries no decision links"
    queue.close()


async def test_slack_body() -> None:
    queue = fresh_queue()
    with Receiver() as receiver:
        async with serving(queue, WebhookTarget(url=receiver.url, format="slack"), link_reviewer="alice") as http:
            request = submit(queue, framework="langgraph", agent="support")
            await until(lambda: len(receiver.bodies) == 1)
            body = receiver.bodies[0]
            assert body["text"] == "langgraph · support asks to run delete_ticket: Deleting a ticket cannot be undone."
            assert body["blocks"][0]["type"] == "section"
            assert '"id": "t1"' in body["blocks"][1]["text"]["text"]
            buttons = {b["text"]["text"]: b["url"] for b in body["blocks"][-1]["elements"]}
            assert set(buttons) == {"Open", "Approve", "Reject…"}
            assert "x-crossgate-signature" not in receiver.headers[0]
            await http.post(
                f"/api/requests/{request.id}/decision", json={"kind": "reject", "message": "no"}, headers=auth("bob")
            )
            await until(lambda: len(receiver.bodies) == 2)
            assert receiver.bodies[1]["text"] == "delete_ticket from langgraph · support: reject by bob via api"
    queue.close()


async def test_failing_receiver_gets_the_notification_after_retries() -> None:
    queue = fresh_queue()
    with Receiver(fail_first=2) as receiver:
        target = WebhookTarget(url=receiver.url, events=("submitted",))
        async with serving(queue, target) as http:
            submit(queue)
            await until(lambda: len(receiver.bodies) == 1)
            assert receiver.attempts == 3
            stats = (await http.get("/api/health")).json()["notifications"]
            assert stats["delivered"] == 1
            assert stats["attempts"] == 3
            assert stats["failed"] == 0
    queue.close()


async def test_silent_receiver_never_blocks_the_queue() -> None:
    queue = fresh_queue()
    with Receiver(silent=True) as silent, Receiver() as healthy:
        targets = (WebhookTarget(url=silent.url), WebhookTarget(url=healthy.url))
        async with serving(queue, *targets, webhook_timeout_seconds=0.3, webhook_attempts=2) as http:
            started = time.monotonic()
            requests = [submit(queue, args={"id": f"t{i}"}) for i in range(5)]
            for request in requests:
                response = await http.post(
                    f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("alice")
                )
                assert response.status_code == 200
            assert time.monotonic() - started < 2.0, "submitting and deciding must not wait for webhooks"
            assert all(queue.get(r.id).status is RequestStatus.DECIDED for r in requests)
            await until(lambda: len(healthy.bodies) == 10)
            await until(lambda: silent.attempts >= 2)
            stats = (await http.get("/api/health")).json()["notifications"]
            assert stats["delivered"] == 10
    assert len(queue.pending()) == 0
    assert len([e for e in queue.events() if e.kind == "decided"]) == 5
    queue.close()


async def test_unreachable_receiver_gives_up_and_loses_no_request() -> None:
    queue = fresh_queue()
    with Receiver() as closed:
        url = closed.url
    async with serving(queue, WebhookTarget(url=url), webhook_attempts=3) as http:
        request = submit(queue)

        async def failed() -> int:
            return int((await http.get("/api/health")).json()["notifications"]["failed"])

        deadline = time.monotonic() + 10
        while await failed() < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        stats = (await http.get("/api/health")).json()["notifications"]
        assert stats["attempts"] == 3
        assert queue.get(request.id).status is RequestStatus.PENDING
        listed = (await http.get("/api/requests", params={"status": "pending"}, headers=auth("alice"))).json()
        assert [r["id"] for r in listed["items"]] == [request.id]
    queue.close()


async def test_people_see_hidden_characters_escaped_machines_get_the_exact_values() -> None:
    args = {"id": "t3\u202e\u200b\x1b[2K"}
    raw = ("\u202e", "\u200b", "\x1b")
    queue = fresh_queue()
    with Receiver() as slack, Receiver() as machine:
        targets = (WebhookTarget(url=slack.url, format="slack"), WebhookTarget(url=machine.url))
        async with serving(queue, *targets, link_reviewer="alice", base_url="http://testserver") as http:
            request = submit(queue, tool="delete_ticket\u200b", args=args, agent="support\u202e")
            await until(lambda: len(slack.bodies) == 1 and len(machine.bodies) == 1)
            body = slack.bodies[0]
            shown = [body["text"], *(b["text"]["text"] for b in body["blocks"][:2])]
            shown += [e["text"] for e in body["blocks"][2]["elements"]]
            for text in shown:
                assert not any(ch in text for ch in raw), text
            headline, warning = body["text"].split("\n")
            assert headline == (
                "openai-agents · support\\u202e asks to run delete_ticket\\u200b: Deleting a ticket cannot be undone."
            )
            assert warning.startswith("⚠ Warning: hidden or look-alike characters: U+200B ZERO WIDTH SPACE")
            assert body["blocks"][1]["text"]["text"] == '```{\n  "id": "t3\\u202e\\u200b\\u001b[2K"\n}```'
            # the JSON body is for machines: the exact values
            assert machine.bodies[0]["request"]["call"]["args"] == args
            assert machine.bodies[0]["request"]["call"]["tool"] == "delete_ticket\u200b"
            # the Approve button opens a confirmation page that shows the call escaped too
            approve = next(b["url"] for b in body["blocks"][-1]["elements"] if b["text"]["text"] == "Approve")
            page = (await http.get(approve.removeprefix("http://testserver"))).text
            assert not any(ch in page for ch in raw)
            assert "&quot;id&quot;: &quot;t3\\u202e\\u200b\\u001b[2K&quot;" in page
            assert queue.get(request.id).call.args == args
    queue.close()


def buttons(slack: dict[str, Any]) -> dict[str, str]:
    return {b["text"]["text"]: b["url"] for b in slack["blocks"][-1]["elements"]}


async def test_expired_and_cancelled_requests_are_announced_without_decision_links() -> None:
    # A card that showed Approve must learn that it no longer works; a target that lists only
    # "submitted" still gets nothing else.
    now = [datetime.now(UTC)]
    queue = ReviewQueue(MemoryStore(), POLICY, clock=lambda: now[0])
    with Receiver() as machine, Receiver() as slack, Receiver() as only_new:
        targets = (
            WebhookTarget(url=machine.url),
            WebhookTarget(url=slack.url, format="slack"),
            WebhookTarget(url=only_new.url, events=("submitted",)),
        )
        async with serving(queue, *targets, link_reviewer="alice", base_url="http://testserver"):
            overdue = submit(queue, timeout_seconds=60)
            dropped = submit(queue, args={"id": "t2"})
            await until(lambda: len(machine.bodies) == 2 and len(slack.bodies) == 2 and len(only_new.bodies) == 2)
            assert {"approve", "reject"} <= set(machine.bodies[0]["links"]), "open requests do get decision links"
            assert "Approve" in buttons(slack.bodies[0])

            now[0] += timedelta(seconds=61)
            queue.expire_overdue()  # the server's sweeper may have got there first: either closes it once
            assert queue.get(overdue.id).status is RequestStatus.EXPIRED
            queue.cancel(dropped.id, actor="ops")
            await until(lambda: len(machine.bodies) == 4 and len(slack.bodies) == 4)

            expired, cancelled = machine.bodies[2:]
            assert (expired["event"], expired["request"]["id"]) == ("request.expired", overdue.id)
            assert (cancelled["event"], cancelled["request"]["id"]) == ("request.cancelled", dropped.id)
            assert (expired["request"]["status"], cancelled["request"]["status"]) == ("expired", "cancelled")
            assert cancelled["actor"] == "ops"
            assert expired["links"] == {"page": f"http://testserver/requests/{overdue.id}"}
            assert cancelled["links"] == {"page": f"http://testserver/requests/{dropped.id}"}

            expired_card, cancelled_card = slack.bodies[2:]
            assert expired_card["text"] == (
                "delete_ticket from openai-agents · support: expired before anyone decided it; it did not run"
            )
            assert cancelled_card["text"] == (
                "delete_ticket from openai-agents · support: cancelled by ops before anyone decided it; it did not run"
            )
            for card, request in ((expired_card, overdue), (cancelled_card, dropped)):
                assert buttons(card) == {"Open": f"http://testserver/requests/{request.id}"}
                assert "/links/" not in str(card)

            # deliveries are in order per target: once the next submission arrives, the closings were passed over
            later = submit(queue, args={"id": "t3"})
            await until(lambda: len(only_new.bodies) == 3)
            assert [b["event"] for b in only_new.bodies] == ["request.submitted"] * 3
            assert only_new.bodies[2]["request"]["id"] == later.id
    queue.close()


async def test_a_request_past_its_expiry_gets_no_decision_links_before_it_is_swept() -> None:
    now = [datetime.now(UTC)]
    queue = ReviewQueue(MemoryStore(), POLICY, clock=lambda: now[0])
    app = create_app(queue, make_settings(link_reviewer="alice", base_url="http://testserver"))
    state = app.state.crossgate
    request = submit(queue, timeout_seconds=60)
    (event,) = queue.events(request_id=request.id)
    assert set(json_body(state, event, request)["links"]) == {"page", "approve", "reject"}
    now[0] += timedelta(seconds=61)
    assert queue.get(request.id).is_open, "not swept yet"
    assert set(json_body(state, event, queue.get(request.id))["links"]) == {"page"}
    queue.close()


async def test_a_target_that_asks_for_approvals_hears_each_one_before_the_decision() -> None:
    two = tuple(r.model_copy(update={"approvals": 2}) if r.name == "deletes" else r for r in POLICY.rules)
    queue = ReviewQueue(MemoryStore(), POLICY.model_copy(update={"rules": two}))
    with Receiver() as receiver:
        target = WebhookTarget(url=receiver.url, format="slack", events=("approved", "decided"))
        async with serving(queue, target):
            request = submit(queue, framework="langgraph", agent="support")
            assert request.approvals_required == 2
            queue.decide(request.id, Approve(), reviewer="ann")
            await until(lambda: len(receiver.bodies) == 1)
            assert receiver.bodies[0]["text"] == (
                "delete_ticket from langgraph · support: approved by ann (1 of 2); it needs another reviewer"
            )
            queue.decide(request.id, Approve(), reviewer="bob")
            await until(lambda: len(receiver.bodies) == 3)
            assert [b["text"] for b in receiver.bodies[1:]] == [
                "delete_ticket from langgraph · support: approved by bob (2 of 2)",
                "delete_ticket from langgraph · support: approve by bob via api",
            ]
    queue.close()


async def test_an_escalation_target_hears_only_of_requests_still_waiting_after_its_delay() -> None:
    queue = fresh_queue()
    with Receiver() as everyone, Receiver() as escalation:
        targets = (
            WebhookTarget(url=everyone.url, events=("submitted",)),
            WebhookTarget(url=escalation.url, format="slack", escalate_after=0.6),
        )
        async with serving(queue, *targets):
            started = time.monotonic()
            waiting = submit(queue, args={"id": "t1"})
            answered = submit(queue, args={"id": "t2"})
            queue.decide(answered.id, Approve(), reviewer="ann")
            await until(lambda: len(everyone.bodies) == 2)
            assert escalation.bodies == [], "nothing before the delay"
            await until(lambda: len(escalation.bodies) == 1)
            assert time.monotonic() - started >= 0.6
            [body] = escalation.bodies
            assert body["text"].startswith("Still waiting for a reviewer after 1 s: openai-agents · support asks")
            assert waiting.id in json.dumps(body)
            await asyncio.sleep(0.5)
            assert len(escalation.bodies) == 1, "the request decided in time is never escalated"
    queue.close()


def test_escalation_targets_are_checked() -> None:
    for bad in (0, -1, "soon", True):
        with pytest.raises(ConfigurationError, match="escalate_after must be a positive number"):
            WebhookTarget(url="http://127.0.0.1:9/h", escalate_after=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"takes events \[submitted\] only"):
        WebhookTarget(url="http://127.0.0.1:9/h", escalate_after=60, events=("submitted", "decided"))
    assert WebhookTarget(url="http://127.0.0.1:9/h", escalate_after=60, events=("submitted",)).escalate_after == 60


def test_the_tokens_file_may_ask_a_webhook_for_the_run_excerpt(tmp_path: Any) -> None:
    from crossgate.server.settings import load_config

    path = tmp_path / "tokens.toml"
    path.write_text('[[webhooks]]\nurl = "http://127.0.0.1:9/h"\ninclude_excerpt = true\n', encoding="utf-8")
    [target] = load_config(path, {})["webhooks"]
    assert target.include_excerpt is True
    path.write_text('[[webhooks]]\nurl = "http://127.0.0.1:9/h"\ninclude_excerpt = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="include_excerpt must be true or false"):
        load_config(path, {})

"""AAP async mode with the real ``agentapprovalprotocol`` Receiver: verification, signed notifications, retries."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agentapprovalprotocol import Receiver, WebhookVerificationFailed
from agentapprovalprotocol.receiver import new_secret
from standardwebhooks.webhooks import Webhook

from crossgate import ReviewQueue
from crossgate.server.app import create_app
from crossgate.stores import open_store
from tests.server.aap.conftest import PROVISIONER, aap_settings
from tests.server.conftest import POLICY, TOKENS
from tests.server.live import live_server

pytestmark = pytest.mark.slow


class Recording:
    """An ASGI app in front of the Receiver: keeps every delivery, and answers 503 to the first ``fail``."""

    def __init__(self, receiver: Receiver, fail: int = 0) -> None:
        self.app, self.fail = receiver.asgi(), fail
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.resumed: list[Any] = []
        self.lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        with self.lock:
            self.deliveries.append((headers, body))
            failing = json.loads(body).get("type") == "request.resolved" and self.fail > 0
            if failing:
                self.fail -= 1
        if failing:
            await send({"type": "http.response.start", "status": 503, "headers": [(b"retry-after", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = iter([{"type": "http.request", "body": body, "more_body": False}])
        await self.app(scope, lambda: asyncio.sleep(0, next(replayed)), send)


@pytest.fixture
def provider_url(tmp_path: Path) -> Iterator[tuple[str, ReviewQueue]]:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    settings = aap_settings(aap_webhook_allow_private=True, webhook_backoff_seconds=0.05, sweep_seconds=0.1)
    with live_server(create_app(queue, settings)) as url:
        yield url, queue
    queue.close()


def delivery(url: str) -> dict[str, str]:
    return {"type": "webhook", "url": url, "registration_id": str(uuid.uuid4()), "signing_secret": new_secret()}


def eventually(check: Any, seconds: float = 15) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.05)
    raise AssertionError("condition not met")


def test_receiver_is_verified_and_a_decision_is_notified_signed_and_retried(
    provider_url: tuple[str, ReviewQueue],
) -> None:
    url, queue = provider_url
    resumed: list[str] = []
    receiver = Receiver(resumers={"test": lambda handle, request: resumed.append(request.status)})
    front = Recording(receiver, fail=2)
    with live_server(front) as hook:
        provisioned = asyncio.run(
            receiver.provision(provider_url=f"{url}/aap", provisioner_token=PROVISIONER, url=f"{hook}/aap")
        )
        verification = json.loads(front.deliveries[0][1])
        assert verification["type"] == "webhook.verification"
        assert verification["instance_id"] == provisioned.instance_id
        body = {
            "tool": "delete_ticket",
            "arguments": {"id": "t1"},
            "timeout": "10m",
            "context": {"resume": {"framework": "test"}},
        }
        headers = {"Authorization": f"Bearer {provisioned.token}", "Idempotency-Key": "k"}
        rid = httpx.post(f"{url}/aap/v1/requests", json=body, headers=headers).json()["id"]
        time.sleep(0.3)
        assert len(front.deliveries) == 1  # nothing is sent while the request is pending
        decided = httpx.post(
            f"{url}/api/requests/{rid}/decision",
            json={"kind": "approve"},
            headers={"Authorization": f"Bearer {TOKENS['alice']}"},
        )
        assert decided.status_code == 200
        eventually(lambda: resumed)
    assert resumed == ["approved"]  # the receiver fetched the decision through the authenticated API
    notices = [(h, b) for h, b in front.deliveries if json.loads(b)["type"] == "request.resolved"]
    assert len(notices) == 3  # two refusals (503), then the acknowledged attempt
    event_ids = {json.loads(b)["id"] for _, b in notices}
    assert len(event_ids) == 1 and {b for _, b in notices} == {notices[0][1]}  # one event, a fixed body
    for headers, raw in notices:
        assert headers["webhook-id"] == json.loads(raw)["id"]
        Webhook(provisioned.secret).verify(raw, headers)  # raises if the signature does not hold
        assert json.loads(raw)["request_id"] == rid and "arguments" not in json.loads(raw)
    assert queue.get(rid).status.value == "decided"


def test_a_receiver_that_cannot_verify_creates_no_instance(provider_url: tuple[str, ReviewQueue]) -> None:
    url, _ = provider_url
    liar = Receiver(resumers={}, secret=new_secret(), registration_id=str(uuid.uuid4()))
    with live_server(liar.asgi()) as hook:
        submission = {
            "instance_name": "x",
            "delivery": {
                "type": "webhook",
                "url": f"{hook}/h",
                "registration_id": str(uuid.uuid4()),
                "signing_secret": new_secret(),
            },
        }
        headers = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": "v-1"}
        r = httpx.post(f"{url}/aap/v1/instances", json=submission, headers=headers)
        assert r.status_code == 422 and r.json()["error"]["code"] == "webhook_verification_failed"
        with pytest.raises(WebhookVerificationFailed):
            asyncio.run(
                Receiver(resumers={}).provision(
                    provider_url=f"{url}/aap", provisioner_token=PROVISIONER, url=f"{hook}/h"
                )
            )
    r = httpx.post(
        f"{url}/aap/v1/instances", json={"instance_name": "x"}, headers={**headers, "Idempotency-Key": "v-2"}
    )
    assert r.status_code == 201  # the failed attempts left nothing behind


def test_an_unsafe_receiver_url_is_refused(tmp_path: Path) -> None:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    with live_server(create_app(queue, aap_settings())) as url:
        for target in ("http://example.com/h", "https://127.0.0.1/h", "https://user@example.com/h"):
            delivery = {
                "type": "webhook",
                "url": target,
                "registration_id": str(uuid.uuid4()),
                "signing_secret": new_secret(),
            }
            r = httpx.post(
                f"{url}/aap/v1/instances",
                json={"delivery": delivery},
                headers={"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": target},
            )
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_webhook_url", (target, r.text)
    queue.close()

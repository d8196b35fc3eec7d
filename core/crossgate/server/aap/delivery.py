"""AAP async mode: receiver verification and ``request.resolved`` notifications, signed per Standard Webhooks.

A delivery configuration is checked (HTTPS, a public address, a ``whsec_`` secret) and verified before
it is stored: the receiver must echo a fresh challenge signed with the proposed secret. Once an
instance has a receiver, every request of it that becomes terminal gets one immutable event, delivered
with exponential backoff and jitter until a 2xx or seven days after the decision, at most one attempt
at a time, each within ten seconds, never following a redirect. ``aap_webhook_allow_private`` lets
loopback and private receivers through, for tests and closed networks only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import random
import re
import socket
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
from standardwebhooks.webhooks import Webhook

from crossgate.server.aap.registry import Delivery
from crossgate.server.aap.wire import AapError, invalid, timestamp

if TYPE_CHECKING:
    from crossgate.server.aap.provider import Provider

log = logging.getLogger(__name__)
SECRET = re.compile(r"^whsec_[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$")
URL = re.compile(r"^https://[^/?#@\s]+([/?][^#\s]*)?$")
ATTEMPT_SECONDS = 10.0
RETRY_WINDOW = timedelta(days=7)


def check_delivery(raw: object, *, allow_private: bool) -> Delivery:
    """A WebhookDeliveryInput as a Delivery, or a 400 (``unsupported_delivery_type``, ``invalid_webhook_url``)."""
    if not isinstance(raw, dict):
        raise invalid("delivery must be an object", "delivery")
    if raw.get("type") != "webhook":
        raise invalid("only webhook delivery is supported", "delivery.type", "unsupported_delivery_type")
    if set(raw) != {"type", "url", "registration_id", "signing_secret"}:
        raise invalid("delivery takes type, url, registration_id and signing_secret", "delivery")
    url, registration, secret = raw["url"], raw["registration_id"], raw["signing_secret"]
    if not isinstance(secret, str) or not SECRET.match(secret):
        raise invalid("signing_secret must be whsec_ and 32 random bytes in base64", "delivery.signing_secret")
    try:
        registration = str(uuid.UUID(str(registration)))
    except ValueError:
        raise invalid("registration_id must be a UUID", "delivery.registration_id") from None
    if not isinstance(url, str):
        raise invalid("url must be a string", "delivery.url", "invalid_webhook_url")
    check_destination(url, allow_private=allow_private)
    return Delivery(url=url, registration_id=registration, secret=secret)


def check_destination(url: str, *, allow_private: bool) -> None:
    """Refuse a receiver URL that is not HTTPS or that resolves to a non-public address (checked per attempt)."""
    parts = urlsplit(url)
    local_http = allow_private and parts.scheme == "http"
    if not (URL.match(url) or (local_http and URL.match("https" + url[4:]))):
        raise invalid(
            "the receiver URL must be https:// with no userinfo or fragment", "delivery.url", "invalid_webhook_url"
        )
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname or "", parts.port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise invalid("the receiver's host does not resolve", "delivery.url", "invalid_webhook_url") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise invalid("the receiver's address is not public", "delivery.url", "invalid_webhook_url")


def signed(secret: str, message_id: str, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers for one attempt: a fresh timestamp and signature each time."""
    now = datetime.now(UTC)
    signature = Webhook(secret).sign(message_id, now, body.decode("utf-8"))
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


async def verify_receiver(
    http: httpx.AsyncClient, delivery: Delivery, instance_id: str, *, allow_private: bool
) -> None:
    """Send the signed challenge; AapError 422 ``webhook_verification_failed`` unless it comes back in 10 s."""
    challenge = str(uuid.uuid4())
    message = {
        "id": str(uuid.uuid4()),
        "type": "webhook.verification",
        "registration_id": delivery.registration_id,
        "instance_id": instance_id,
        "created_at": timestamp(datetime.now(UTC)),
        "challenge": challenge,
    }
    body = json.dumps(message, separators=(",", ":")).encode()
    try:
        check_destination(delivery.url, allow_private=allow_private)
        response = await http.post(
            delivery.url,
            content=body,
            headers=signed(delivery.secret, str(message["id"]), body),
            timeout=ATTEMPT_SECONDS,
            follow_redirects=False,
        )
        answer = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AapError):
        answer = None
    if not isinstance(answer, dict) or answer.get("challenge") != challenge:
        raise AapError(
            422,
            "invalid_request",
            "webhook_verification_failed",
            "the webhook receiver could not be verified",
            "delivery",
        )


@dataclass(slots=True)
class _Event:
    id: str
    instance_id: str
    request_id: str
    created_at: datetime
    attempts: int = 0
    next_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def body(self) -> bytes:
        event = {
            "id": self.id,
            "type": "request.resolved",
            "instance_id": self.instance_id,
            "request_id": self.request_id,
            "created_at": timestamp(self.created_at),
        }
        return json.dumps(event, separators=(",", ":")).encode()


class Notifier:
    """Finds requests that became terminal, makes one event each, and delivers it until acknowledged."""

    def __init__(self, provider: Provider, *, sweep_seconds: float, transport: httpx.AsyncBaseTransport | None) -> None:
        self.provider = provider
        self.sweep = sweep_seconds
        self.http = httpx.AsyncClient(transport=transport, follow_redirects=False)
        self.events: dict[str, _Event] = {}
        """Outstanding events by request id."""
        self.done: set[str] = set()
        """Requests whose event was made (delivered, or ended), so none is made twice."""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Begin sweeping and delivering."""
        self._task = asyncio.create_task(self._run(), name="aap-notifier")

    async def stop(self) -> None:
        """Stop, and close the HTTP client and the registry's journal."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.http.aclose()
        self.provider.registry.close()

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.collect)
                await self.deliver_due()
            except Exception:  # a failed sweep must not end delivery; the next one retries
                log.exception("AAP notification sweep failed")
            await asyncio.sleep(self.sweep)

    def collect(self) -> None:
        """Make an event for each request of an instance with a receiver that is terminal now."""
        registry = self.provider.registry
        for record in registry.all_requests():
            if record.notified or record.id in self.done:
                continue
            instance = registry.instance(record.instance_id)
            if instance is None or instance.deleted_at is not None or instance.delivery is None:
                continue
            view = self.provider.view(record)
            if view["status"] == "pending":
                continue
            decision = view["decision"]
            assert isinstance(decision, dict)
            decided = datetime.fromisoformat(str(decision["decided_at"]).replace("Z", "+00:00"))
            self.done.add(record.id)
            registry.save(replace(record, notified=True))
            self.events[record.id] = _Event(str(uuid.uuid4()), record.instance_id, record.id, decided)

    async def deliver_due(self) -> None:
        """One attempt for every event whose retry time has come (one at a time per event)."""
        now = datetime.now(UTC)
        for event in [e for e in self.events.values() if e.next_at <= now]:
            await self._attempt(event, now)

    async def _attempt(self, event: _Event, now: datetime) -> None:
        instance = self.provider.registry.instance(event.instance_id)
        delivery = instance.delivery if instance is not None and instance.deleted_at is None else None
        if delivery is None or now > event.created_at + RETRY_WINDOW:
            del self.events[event.request_id]  # removal, deletion and the window's end stop retries
            return
        body = event.body()
        retry_after: float | None = None
        try:
            check_destination(delivery.url, allow_private=self.provider.allow_private)
            response = await self.http.post(
                delivery.url, content=body, headers=signed(delivery.secret, event.id, body), timeout=ATTEMPT_SECONDS
            )
            if 200 <= response.status_code < 300:
                del self.events[event.request_id]
                return
            if response.status_code in (429, 503):
                retry_after = _retry_after(response.headers.get("retry-after"))
        except (httpx.HTTPError, AapError):
            pass
        event.attempts += 1
        backoff = min(3600.0, self.provider.webhook_backoff * 2 ** (event.attempts - 1))
        delay = max(backoff * random.uniform(0.5, 1.0), retry_after or 0.0)
        event.next_at = now + timedelta(seconds=delay)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None

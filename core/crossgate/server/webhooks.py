"""Webhook notifications on new and decided requests, fed from the event log.

The notifier reads the log after the queue has recorded a change (invariant 4: a pause persists
before anyone is notified), so a slow, failing or silent receiver can delay only its own deliveries:
it never blocks a submission or a decision, and a lost delivery loses no request. Each target has its
own bounded delivery queue and worker; a failed attempt is retried with exponential backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import random
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx

from crossgate.model import ApprovalRequest, DecisionKind, Event
from crossgate.server.settings import WebhookTarget
from crossgate.server.state import ServerState

log = logging.getLogger(__name__)

MAX_BACKLOG = 1000
EVENT_NAMES = {"submitted": "request.submitted", "decided": "request.decided"}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notification for one target."""

    target: WebhookTarget
    body: bytes
    event_seq: int


class Notifier:
    """Turns logged events into webhook deliveries; one background worker per target."""

    def __init__(self, state: ServerState, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._state = state
        self._settings = state.settings
        self._transport = transport
        self._queues = {t.url: asyncio.Queue[Delivery](MAX_BACKLOG) for t in self._settings.webhooks}
        self._tasks: list[asyncio.Task[None]] = []
        self._counts: Counter[str] = Counter()

    def stats(self) -> dict[str, int]:
        """Counters: queued, delivered, failed (gave up), attempts, dropped (backlog full)."""
        counts = {k: self._counts[k] for k in ("queued", "delivered", "failed", "attempts", "dropped")}
        counts["backlog"] = sum(q.qsize() for q in self._queues.values())
        return counts

    async def start(self) -> None:
        """Start reading the log from its current head, and one worker per target."""
        if not self._settings.webhooks:
            return
        client = httpx.AsyncClient(transport=self._transport, timeout=self._settings.webhook_timeout_seconds)
        self._client = client
        self._tasks.append(asyncio.create_task(self._follow(self._state.feed.head), name="crossgate-notifier"))
        for target in self._settings.webhooks:
            self._tasks.append(asyncio.create_task(self._deliver_all(target), name=f"crossgate-webhook {target.url}"))

    async def stop(self) -> None:
        """Cancel the workers; undelivered notifications are dropped (the requests stay in the queue)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._settings.webhooks:
            await self._client.aclose()

    async def _follow(self, after: int) -> None:
        wanted = {kind for t in self._settings.webhooks for kind in t.events}
        cursor = after
        while True:
            await self._state.feed.wait_beyond(cursor, timeout=30)
            events = await anyio.to_thread.run_sync(self._read, cursor)
            for event in events:
                cursor = event.seq
                if event.kind in wanted and event.request_id is not None:
                    try:
                        deliveries = await anyio.to_thread.run_sync(self._deliveries, event)
                    except Exception:  # one unreadable request must not stop notifications for the rest
                        log.exception("crossgate could not build a notification for event %s", event.seq)
                        continue
                    for delivery in deliveries:
                        self._enqueue(delivery)

    def _read(self, after: int) -> list[Event]:
        return self._state.queue.events(after=after, limit=500)

    def _deliveries(self, event: Event) -> list[Delivery]:
        assert event.request_id is not None
        request = self._state.queue.get(event.request_id)
        return [
            Delivery(target, json.dumps(_BODIES[target.format](self._state, event, request)).encode(), event.seq)
            for target in self._settings.webhooks
            if event.kind in target.events
        ]

    def _enqueue(self, delivery: Delivery) -> None:
        try:
            self._queues[delivery.target.url].put_nowait(delivery)
            self._counts["queued"] += 1
        except asyncio.QueueFull:
            self._counts["dropped"] += 1
            log.warning("crossgate webhook %s is %d deliveries behind; dropping one", delivery.target.url, MAX_BACKLOG)

    async def _deliver_all(self, target: WebhookTarget) -> None:
        queue = self._queues[target.url]
        while True:
            delivery = await queue.get()
            await self._deliver(delivery)

    async def _deliver(self, delivery: Delivery) -> None:
        target = delivery.target
        headers = {"content-type": "application/json", "user-agent": "crossgate-webhooks"}
        if target.secret:
            digest = hmac.new(target.secret.encode(), delivery.body, hashlib.sha256).hexdigest()
            headers["x-crossgate-signature"] = f"sha256={digest}"
        attempts = self._settings.webhook_attempts
        for attempt in range(1, attempts + 1):
            self._counts["attempts"] += 1
            try:
                response = await self._client.post(target.url, content=delivery.body, headers=headers)
                if response.status_code < 300:
                    self._counts["delivered"] += 1
                    return
                problem = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < attempts:
                delay = self._settings.webhook_backoff_seconds * 2 ** (attempt - 1)
                await asyncio.sleep(delay * (0.75 + random.random() / 2))  # jitter spreads retries of many servers
            else:
                self._counts["failed"] += 1
                log.warning(
                    "crossgate gave up on webhook %s for event %s after %d attempts: %s",
                    target.url,
                    delivery.event_seq,
                    attempts,
                    problem,
                )


def _links(state: ServerState, request: ApprovalRequest) -> dict[str, str]:
    base = state.settings.base_url.rstrip("/")
    links = {"page": f"{base}/requests/{request.id}"}
    reviewer = state.settings.link_reviewer
    if request.is_open and reviewer is not None:
        expires = datetime.now(UTC) + timedelta(seconds=state.settings.link_ttl_seconds)
        for kind, url in state.sign_links(request, reviewer, expires, base).items():
            links[kind.value] = url
    return links


def json_body(state: ServerState, event: Event, request: ApprovalRequest) -> dict[str, Any]:
    """crossgate's own JSON notification."""
    return {
        "event": EVENT_NAMES.get(event.kind, f"request.{event.kind}"),
        "seq": event.seq,
        "at": event.at.isoformat(),
        "actor": event.actor,
        "channel": event.channel,
        "request": request.model_dump(mode="json"),
        "links": _links(state, request),
    }


def slack_body(state: ServerState, event: Event, request: ApprovalRequest) -> dict[str, Any]:
    """A body a Slack-compatible incoming webhook accepts: ``text`` plus Block Kit ``blocks``."""
    call = request.call
    links = _links(state, request)
    who = f"{call.framework}" + (f" · {call.agent}" if call.agent else "")
    args = json.dumps(call.args, indent=2, ensure_ascii=False)
    if len(args) > 2500:
        args = args[:2500] + "\n…"
    if event.kind == "submitted":
        text = f"{who} asks to run {call.tool}: {request.reason}"
    else:
        decision = request.decision.kind.value if request.decision else event.kind
        text = f"{call.tool} from {who}: {decision} by {event.actor} via {event.channel}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{args}```"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"request `{request.id}` · run `{call.run}`"}]},
    ]
    buttons = [
        {"type": "button", "text": {"type": "plain_text", "text": label}, "url": links[key]}
        for key, label in (
            ("page", "Open"),
            (DecisionKind.APPROVE.value, "Approve"),
            (DecisionKind.REJECT.value, "Reject…"),
        )
        if key in links
    ]
    blocks.append({"type": "actions", "elements": buttons})
    return {"text": text, "blocks": blocks}


_BODIES = {"json": json_body, "slack": slack_body}

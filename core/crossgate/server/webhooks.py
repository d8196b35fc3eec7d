"""Webhook notifications on new, decided, expired and cancelled requests, fed from the event log.

The notifier reads the log after the queue has recorded a change (invariant 4: a pause persists
before anyone is notified), so a slow, failing or silent receiver can delay only its own deliveries:
it never blocks a submission or a decision, nor another target, and a lost delivery loses no request.

What a receiver can rely on:

- **Ordered per target.** Each target has a delivery cursor in the store (named by a digest of its
  URL, never the URL, which may carry a token): the last event done for it. Events after the cursor
  are sent one at a time, in log order, and the cursor moves past each once it is delivered.
- **One server per target.** Whoever holds the cursor's lease delivers; other servers on the same
  store skip the target and try to claim it every third of ``webhook_lease_seconds``. The holder
  renews the lease while it delivers and releases it on a clean stop; if it dies, the lease runs out
  and another server goes on from the stored cursor.
- **Resumes after a restart.** Events logged while no server ran are sent when one starts. A target
  the store has never seen starts at the log's head when the server starts: old history is not replayed.
- **At least once.** A server that dies between sending and storing the cursor leaves that event to
  be sent again by the next holder. Every delivery carries ``X-Crossgate-Delivery: <target>:<seq>``,
  the same on every attempt and every redelivery, so a receiver can drop what it has seen.
- **Given up after the attempts.** A failed attempt (connection error, timeout, non-2xx) is retried
  with exponential backoff and jitter, up to ``webhook_attempts``; then the event is logged, counted as
  failed, and the cursor moves past it, so a dead receiver cannot hold its target back forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import random
import secrets
import socket
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from crossgate.display import suspicious_call, visible, visible_lines, warning_text
from crossgate.model import ApprovalRequest, DecisionKind, Event, EventKind, RequestStatus, event_kind, is_outcome
from crossgate.server.channels.teams import adaptive_card_message
from crossgate.server.delivery import CursorLease, wait_until_due
from crossgate.server.settings import WebhookTarget
from crossgate.server.state import ServerState
from crossgate.stores.cursors import DeliveryCursors, delivery_cursors

log = logging.getLogger(__name__)

APPLIED_WORDS = {
    RequestStatus.APPLIED: "the approval reached the agent, which runs the call",
    RequestStatus.REJECTED: "the model read the rejection; nothing ran",
    RequestStatus.ANSWERED: "the model read the reviewer's answer; the tool did not run",
}
"""What an ``applied`` event says in a message people read, by the status it left the request in."""
ESCALATED = "request.escalated"
"""The event name an escalation target's notifications carry."""
READ_BATCH = 100
"""Events read from the log at a time, per target."""
DELIVERY_HEADER = "x-crossgate-delivery"
STOP_GRACE_SECONDS = 5.0
"""How long a stopping server lets deliveries under way finish, so a clean restart sends nothing twice."""


def target_digest(url: str) -> str:
    """sha256 hex of a target's URL: how the store and the headers name it without its secrets."""
    return hashlib.sha256(url.encode()).hexdigest()


def cursor_name(url: str) -> str:
    """The name of the delivery cursor of the target at ``url``."""
    return f"webhook:{target_digest(url)}"


def delivery_id(url: str, seq: int) -> str:
    """The idempotency key of event ``seq``'s notification to ``url``: the same on every redelivery."""
    return f"{target_digest(url)[:16]}:{seq}"


def target_kind(target: WebhookTarget) -> str:
    """The ``target_kind`` label of a target's delivery metrics: ``slack`` for a Slack-format body, else ``webhook``."""
    return "slack" if target.format == "slack" else "webhook"


def _label(url: str) -> str:
    """A target as logs show it: host and digest, not the path or query, which may carry a token."""
    return f"{urlsplit(url).netloc or '?'} [{target_digest(url)[:16]}]"


class Notifier:
    """Turns logged events into webhook deliveries: per target, one task that claims and follows its cursor."""

    def __init__(self, state: ServerState, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._state = state
        self._settings = state.settings
        self._transport = transport
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lease_seconds = self._settings.webhook_lease_seconds
        self._leases: dict[str, CursorLease] = {}
        self._cursors: DeliveryCursors | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._counts: Counter[str] = Counter()
        self._start_head = 0
        self._stopping = asyncio.Event()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def owner(self) -> str:
        """This server's name on the leases it holds."""
        return self._owner

    def stats(self) -> dict[str, int]:
        """Counters: delivered, failed (gave up), attempts; leases held here, and their backlog of events."""
        counts = {k: self._counts[k] for k in ("delivered", "failed", "attempts")}
        counts["leases"] = len(self._leases)
        head = self._state.feed.head
        counts["backlog"] = sum(max(0, head - lease.position) for lease in self._leases.values())
        return counts

    async def start(self) -> None:
        """Start one task per target; a target new to the store starts at the log's current head."""
        if not self._settings.webhooks:
            return
        cursors = self._cursors = delivery_cursors(self._state.queue.store)  # refused before any task starts
        self._start_head = self._state.feed.head
        self._client = httpx.AsyncClient(transport=self._transport, timeout=self._settings.webhook_timeout_seconds)
        for target in self._settings.webhooks:
            task = asyncio.create_task(self._serve(target, cursors), name=f"crossgate-webhook {_label(target.url)}")
            self._tasks.append(task)

    async def stop(self) -> None:
        """Stop delivering and release every lease this server holds; the cursors keep their place.

        Deliveries under way get up to ``STOP_GRACE_SECONDS`` to finish and store their cursor, so a
        clean stop (a deploy) sends nothing twice; one still retrying then is left for the next server.
        """
        self._stopping.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), STOP_GRACE_SECONDS)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._leases.clear()
        if not self._settings.webhooks:
            return
        store = self._cursors
        if store is None:  # never started
            return
        for target in self._settings.webhooks:
            # Every target, not only those held: a claim can land while its task is being cancelled.
            try:
                await anyio.to_thread.run_sync(store.release_delivery_cursor, cursor_name(target.url), self._owner)
            except Exception:  # the lease then runs out by itself
                log.warning("crossgate could not release the webhook lease on %s", _label(target.url), exc_info=True)
        await self._client.aclose()

    async def _serve(self, target: WebhookTarget, cursors: DeliveryCursors) -> None:
        """Claim the target's cursor, deliver while holding it, and claim again after losing it."""
        store, name = cursors, cursor_name(target.url)
        while True:
            try:
                lease = await CursorLease.claim(store, name, self._owner, self._lease_seconds, self._start_head)
                if lease is not None:
                    self._leases[target.url] = lease
                    await self._hold(target, lease)
            except Exception:  # a store or body error must not end notifications for this target
                log.exception("crossgate stopped delivering to webhook %s; claiming it again", _label(target.url))
            finally:
                self._leases.pop(target.url, None)
            await asyncio.sleep(self._lease_seconds / 3 * (0.75 + random.random() / 2))

    async def _hold(self, target: WebhookTarget, lease: CursorLease) -> None:
        """Deliver and keep the lease alive together, until the lease is lost or delivery fails."""
        keeper = asyncio.create_task(lease.keep())
        deliverer = asyncio.create_task(self._follow(target, lease))
        try:
            done, _ = await asyncio.wait((keeper, deliverer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (keeper, deliverer):
                task.cancel()
            await asyncio.gather(keeper, deliverer, return_exceptions=True)
        for task in done:
            task.result()  # re-raise a delivery error for _serve to log

    async def _follow(self, target: WebhookTarget, lease: CursorLease) -> None:
        """Send the events after the cursor in order, advancing it after each; return if the lease is lost."""
        feed = self._state.feed
        while True:
            events = await anyio.to_thread.run_sync(self._read, lease.position)
            if not events:
                if feed.head > lease.position:  # the feed saw a head the log does not show yet: no spinning
                    await asyncio.sleep(self._settings.sweep_seconds)
                await feed.wait_beyond(lease.position, timeout=self._lease_seconds)
                continue
            for event in events:
                if event_kind(event) not in target.events or event.request_id is None:
                    lease.skip(event.seq)
                    continue
                if target.escalate_after is not None and not await wait_until_due(
                    event, target.escalate_after, self._state.queue.now(), self._stopping
                ):
                    return  # stopping: the event stays due for the next server
                body = await anyio.to_thread.run_sync(self._body, target, event)
                if body is None:
                    lease.skip(event.seq)
                    continue
                if self._stopping.is_set():
                    return
                self._in_flight += 1
                self._idle.clear()
                try:
                    if not await self._deliver(target, event, body):
                        return  # stopped between retries: the next server sends it, under the same id
                    advanced = await lease.advance(event.seq)
                finally:
                    self._in_flight -= 1
                    if not self._in_flight:
                        self._idle.set()
                if not advanced:
                    log.warning("crossgate lost the lease on webhook %s to another server", _label(target.url))
                    return

    def _read(self, after: int) -> list[Event]:
        return self._state.queue.events(after=after, limit=READ_BATCH)

    def _body(self, target: WebhookTarget, event: Event) -> bytes | None:
        assert event.request_id is not None
        try:
            request = self._state.queue.get(event.request_id)
            escalating = target.escalate_after is not None
            if escalating and not request.is_open:
                return None  # decided (or closed) in time: nothing to escalate
            body = _BODIES[target.format](self._state, event, request, escalated=escalating)
            if target.format == "json" and target.include_excerpt and request.excerpt is not None:
                body["request"]["excerpt"] = request.excerpt.model_dump(mode="json")
            return json.dumps(body).encode()
        except Exception:  # one unreadable request must not stop notifications for the rest
            log.exception("crossgate could not build a notification for event %s", event.seq)
            return None

    async def _deliver(self, target: WebhookTarget, event: Event, body: bytes) -> bool:
        """Post ``body`` with retries; count it delivered, or failed once the attempts run out.

        True when the event is done with (delivered, or given up on); False if the server began
        stopping between attempts, so the event stays due.
        """
        headers = {
            "content-type": "application/json",
            "user-agent": "crossgate-webhooks",
            DELIVERY_HEADER: delivery_id(target.url, event.seq),
        }
        if target.secret:
            digest = hmac.new(target.secret.encode(), body, hashlib.sha256).hexdigest()
            headers["x-crossgate-signature"] = f"sha256={digest}"
        attempts = self._settings.webhook_attempts
        problem = "no attempts configured"
        kind = target_kind(target)
        recorded = self._state.metrics.delivery if self._state.metrics is not None else None
        for attempt in range(1, attempts + 1):
            self._counts["attempts"] += 1
            if recorded is not None:
                recorded.attempted(kind)
            try:
                response = await self._client.post(target.url, content=body, headers=headers)
                if response.status_code < 300:
                    self._counts["delivered"] += 1
                    if recorded is not None:
                        recorded.delivered(kind, (self._state.queue.now() - event.at).total_seconds())
                    return True
                problem = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < attempts:
                delay = self._settings.webhook_backoff_seconds * 2 ** (attempt - 1)
                delay *= 0.75 + random.random() / 2  # jitter spreads the retries of many servers
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)
                    return False
        self._counts["failed"] += 1
        if recorded is not None:
            recorded.failed(kind)
        log.warning(
            "crossgate gave up on webhook %s for event %s after %d attempts (%s); moving past it",
            _label(target.url),
            event.seq,
            attempts,
            problem,
        )
        return True


def _links(state: ServerState, request: ApprovalRequest) -> dict[str, str]:
    """The request's page, and signed decision links while it can still be decided.

    The body is built from the request as it is when the notification goes out: a request that was
    decided, expired or cancelled meanwhile, or is past its expiry, gets no decision links.
    """
    base = state.settings.base_url.rstrip("/")
    links = {"page": f"{base}/requests/{request.id}"}
    reviewer = state.settings.link_reviewer
    overdue = request.expires_at is not None and request.expires_at <= state.queue.now()
    if request.is_open and not overdue and reviewer is not None:
        expires = datetime.now(UTC) + timedelta(seconds=state.settings.link_ttl_seconds)
        for kind, url in state.sign_links(request, reviewer, expires).items():
            links[kind.value] = url
    return links


def json_body(state: ServerState, event: Event, request: ApprovalRequest, *, escalated: bool = False) -> dict[str, Any]:
    """crossgate's own JSON notification (``request.escalated`` for a request still waiting at an escalation).

    The request is exact; ``warnings`` lists, for people, what in the call may hide or imitate other text.
    """
    return {
        "event": ESCALATED if escalated else f"request.{event_kind(event)}",
        "seq": event.seq,
        "at": event.at.isoformat(),
        "actor": event.actor,
        "channel": event.channel,
        # What the run did stays on the page unless the target asks for it (WebhookTarget.include_excerpt).
        "request": request.model_dump(mode="json", exclude={"excerpt"}),
        "links": _links(state, request),
        "warnings": suspicious_call(request.call),
    }


def summary(state: ServerState, event: Event, request: ApprovalRequest, *, escalated: bool = False) -> str:
    """What ``event`` did to ``request``, in one line people read (hidden characters as escapes)."""
    call = request.call
    who = f"{call.framework}" + (f" · {call.agent}" if call.agent else "")
    if escalated:
        waited = _duration((state.queue.now() - request.created_at).total_seconds())
        text = f"Still waiting for a reviewer after {waited}: {who} asks to run {call.tool}: {request.reason}"
    elif event.kind == "submitted":
        text = f"{who} asks to run {call.tool}: {request.reason}"
    elif event.kind == "approved":
        count, required = event.payload.get("approvals"), event.payload.get("required")
        short = isinstance(count, int) and isinstance(required, int) and count < required
        more = "; it needs another reviewer" if short else ""
        text = f"{call.tool} from {who}: approved by {event.actor} ({count} of {required}){more}"
    elif event.kind in ("expired", "cancelled"):
        by = f" by {event.actor}" if event.kind == "cancelled" and event.actor else ""
        when = "after it was approved" if request.decision else "before anyone decided it"
        text = f"{call.tool} from {who}: {event.kind}{by} {when}; it did not run"
    elif is_outcome(event):
        ran = event_kind(event) == EventKind.RAN
        text = f"{call.tool} from {who}: " + ("it ran" if ran else "it did not run")
        if ran and event.payload.get("error"):
            text += f" and failed: {event.payload['error']}"
    elif event.kind == EventKind.APPLIED:
        text = f"{call.tool} from {who}: {APPLIED_WORDS.get(request.status, request.status.value)}"
    else:
        decision = request.decision.kind.value if request.decision else event.kind
        text = f"{call.tool} from {who}: {decision} by {event.actor} via {event.channel}"
    return visible(text)


def slack_body(
    state: ServerState, event: Event, request: ApprovalRequest, *, escalated: bool = False
) -> dict[str, Any]:
    """A body a Slack-compatible incoming webhook accepts: ``text`` plus Block Kit ``blocks``.

    People read it, so hidden characters in the tool, the arguments and the names are written as
    escapes (``crossgate.display``); the JSON body keeps the exact values.
    """
    call = request.call
    links = _links(state, request)
    args = visible_lines(json.dumps(call.args, indent=2, ensure_ascii=False))
    if len(args) > 2500:
        args = args[:2500] + "\n…"
    text = summary(state, event, request, escalated=escalated)
    where = visible(f"request `{request.id}` · run `{call.run}`")
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{args}```"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": where}]},
    ]
    if findings := suspicious_call(call):
        warning = f"⚠ Warning: {warning_text(findings)}"
        text = f"{text}\n{warning}"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": warning}})
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


def teams_body(
    state: ServerState, event: Event, request: ApprovalRequest, *, escalated: bool = False
) -> dict[str, Any]:
    """A body a Microsoft Teams workflow webhook posts to its channel: one Adaptive Card with signed links."""
    text = summary(state, event, request, escalated=escalated)
    return adaptive_card_message(request, text, _links(state, request))


_BODIES = {"json": json_body, "slack": slack_body, "teams": teams_body}


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{round(seconds)} s"
    return f"{minutes} min" if minutes < 120 else f"{round(minutes / 60)} h"

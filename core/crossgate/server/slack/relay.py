"""Posts each request's message to Slack and keeps it in step with the record, from the event log.

A new request gets a message (``chat.postMessage``); every later change of it (an approval of several,
the decision from any channel, the call's outcome, expiry, cancellation) rewrites that message from the
request as it is now (``chat.update``), so the message is a view over the durable record. With
``escalate_after`` a request still waiting then gets a reply in its message's thread. Slack unreachable
(a connection error, a 5xx, rate limiting): :class:`ChannelUnavailable`, so the follower retries the same
event from its cursor; the request stays pending and the page works as before.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from typing import Any

import anyio
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from crossgate.model import ApprovalRequest, Event, EventKind
from crossgate.server.channels.config import SlackSettings
from crossgate.server.channels.follower import ChannelUnavailable, LogFollower
from crossgate.server.channels.refs import message_ts, remember_message
from crossgate.server.slack.blocks import escalation_text, message
from crossgate.server.state import ServerState
from crossgate.stores.cursors import delivery_cursors

log = logging.getLogger(__name__)
FOLLOWED = frozenset(
    {
        EventKind.SUBMITTED,
        EventKind.APPROVED,
        EventKind.DECIDED,
        EventKind.APPLIED,
        EventKind.RAN,
        EventKind.NOT_RUN,
        EventKind.EXPIRED,
        EventKind.CANCELLED,
    }
)
"""Every change of a request the message shows."""
TRANSIENT_ERRORS = frozenset({"ratelimited", "service_unavailable", "fatal_error", "internal_error", "request_timeout"})


def web_client(settings: SlackSettings) -> WebClient:
    """``slack_sdk``'s client for the app's bot token, at ``api_url`` when one is set."""
    if settings.api_url:
        return WebClient(token=settings.bot_token, base_url=settings.api_url.rstrip("/") + "/", timeout=10)
    return WebClient(token=settings.bot_token, timeout=10)


def call_slack(client: WebClient, method: str, **kwargs: Any) -> dict[str, Any]:
    """Call a Web API method; ChannelUnavailable when Slack cannot be reached or asks to come back later."""
    try:
        response = client.api_call(method, json=kwargs)
        response.validate()  # type: ignore[no-untyped-call]  # slack_sdk leaves it unannotated
    except SlackApiError as exc:
        status = exc.response.status_code
        error = str(exc.response.get("error", "")) if isinstance(exc.response.data, dict) else ""
        if status >= 500 or status == 429 or error in TRANSIENT_ERRORS:
            raise ChannelUnavailable(f"Slack {method}: HTTP {status} {error}".strip()) from None
        raise
    except (OSError, ValueError) as exc:  # connection refused, timeout, a body that is not JSON
        raise ChannelUnavailable(f"Slack {method}: {type(exc).__name__}: {exc}") from None
    data = response.data
    return data if isinstance(data, dict) else {}


class SlackRelay:
    """The Slack app's messages: one follower of the log, and one for escalations when configured."""

    def __init__(self, state: ServerState, settings: SlackSettings, client: WebClient | None = None) -> None:
        self._state = state
        self.settings = settings
        self.client = client or web_client(settings)
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        channel = settings.channel
        self.followers = [
            LogFollower(state, f"slack:{channel}", FOLLOWED, self.on_event, retry_seconds=settings.retry_seconds)
        ]
        if settings.escalate_after is not None:
            self.followers.append(
                LogFollower(
                    state,
                    f"slack-escalation:{channel}:{settings.escalate_after:g}",
                    frozenset({EventKind.SUBMITTED}),
                    self.on_escalation,
                    retry_seconds=settings.retry_seconds,
                    delay_seconds=settings.escalate_after,
                )
            )

    def stats(self) -> dict[str, dict[str, int]]:
        """The message follower's counters under ``slack``, the escalations' under ``slack-escalation``."""
        return dict(zip(("slack", "slack-escalation"), (f.stats() for f in self.followers), strict=False))

    async def start(self) -> None:
        for follower in self.followers:
            await follower.start()

    async def stop(self) -> None:
        for follower in self.followers:
            await follower.stop()

    async def on_event(self, event: Event, request: ApprovalRequest) -> None:
        """Post the request's message, or rewrite it from the request as it is now."""
        await anyio.to_thread.run_sync(self._show, event, request)

    async def on_escalation(self, event: Event, request: ApprovalRequest) -> None:
        """Reply in the message's thread if the request still waits."""
        await anyio.to_thread.run_sync(self._escalate, request)

    def _show(self, event: Event, request: ApprovalRequest) -> None:
        store = delivery_cursors(self._state.queue.store)
        channel = self.settings.channel
        ts = message_ts(store, channel, request.id)
        queue = self._state.queue
        text, blocks = message(request, queue.events(request_id=request.id), queue.now())
        if ts is not None:
            call_slack(self.client, "chat.update", channel=channel, ts=ts, text=text, blocks=blocks)
        elif event.kind == EventKind.SUBMITTED:
            posted = call_slack(
                self.client, "chat.postMessage", channel=channel, text=text, blocks=blocks, unfurl_links=False
            )
            remember_message(store, channel, request.id, str(posted["ts"]), self._owner)

    def _escalate(self, request: ApprovalRequest) -> None:
        if not request.is_open:
            return
        channel = self.settings.channel
        ts = message_ts(delivery_cursors(self._state.queue.store), channel, request.id)
        if ts is None:
            raise ChannelUnavailable("the request's message is not posted yet")
        text = escalation_text(request, self._state.queue.now())
        call_slack(self.client, "chat.postMessage", channel=channel, thread_ts=ts, text=text)

"""What every route needs: the queue, the settings, and the server's long-lived helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from fastapi import Request

from crossgate.model import ApprovalRequest, DecisionKind
from crossgate.queue import ReviewQueue
from crossgate.server.access import Authenticator
from crossgate.server.feed import ChangeFeed
from crossgate.server.links import LINKABLE_DECISIONS, LinkClaims, LinkSigner
from crossgate.server.settings import ServerSettings

if TYPE_CHECKING:
    from crossgate.server.channels import Channel
    from crossgate.server.metrics import Metrics
    from crossgate.server.webhooks import Notifier


@dataclass(slots=True)
class ServerState:
    """One per app, kept on ``app.state.crossgate``."""

    queue: ReviewQueue
    settings: ServerSettings
    auth: Authenticator
    signer: LinkSigner
    feed: ChangeFeed
    notifier: Notifier | None = None
    metrics: Metrics | None = None
    channels: list[Channel] = field(default_factory=list)
    """The Slack app and the e-mail notifier, when configured."""

    def sign_links(self, request: ApprovalRequest, reviewer: str, expires: datetime) -> dict[DecisionKind, str]:
        """Signed link URLs for each linkable decision the request allows.

        They start with the configured ``base_url``, never with anything the client sent (a forged
        ``Host`` header must not turn a link into one to another site).
        """
        base_url = self.settings.base_url.rstrip("/")
        urls: dict[DecisionKind, str] = {}
        for kind in LINKABLE_DECISIONS:
            if kind in request.allowed_decisions:
                claims = LinkClaims(
                    request_id=request.id,
                    fingerprint=request.fingerprint,
                    decision=kind,
                    expires_at=int(expires.timestamp()),
                    reviewer=reviewer,
                )
                urls[kind] = f"{base_url}/links/{self.signer.sign(claims)}"
        return urls


def server_state(request: Request) -> ServerState:
    """The state of the app serving ``request``."""
    state: ServerState = request.app.state.crossgate
    return state

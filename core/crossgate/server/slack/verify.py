"""Every request to the interactivity endpoint is checked: Slack's signature, its timestamp, and replays.

``slack_sdk.signature.SignatureVerifier`` checks the HMAC-SHA256 (``v0=…``) over ``v0:<timestamp>:<body>``
with the app's signing secret, and refuses a timestamp more than five minutes from now. A request seen
already (the same signature, so the same timestamp and body) is refused as a replay for as long as its
timestamp would pass. With several servers a replay sent to another one passes this check, and the
queue still decides each request once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from slack_sdk.signature import SignatureVerifier

WINDOW_SECONDS = 300
"""Slack's own: a request whose timestamp is further from now is refused."""


class SlackRequestRefused(Exception):
    """An interactivity request that is not genuinely Slack's, or not fresh; the message says which."""


class SlackVerifier:
    """Checks signature, freshness and uniqueness of Slack's requests."""

    def __init__(self, signing_secret: str) -> None:
        self._verifier = SignatureVerifier(signing_secret)
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, body: bytes, headers: Mapping[str, str]) -> None:
        """Return if ``body`` is a fresh, genuine, first-seen Slack request; SlackRequestRefused otherwise."""
        stamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        if not stamp.isdigit() or not signature:
            raise SlackRequestRefused("not a signed Slack request: X-Slack-Signature and its timestamp are required")
        now = time.time()
        if abs(now - int(stamp)) > WINDOW_SECONDS:
            raise SlackRequestRefused("the Slack request's timestamp is more than five minutes away from now")
        if not self._verifier.is_valid(body=body, timestamp=stamp, signature=signature):
            raise SlackRequestRefused("the Slack signature does not match this request")
        with self._lock:
            for key, seen_at in list(self._seen.items()):
                if seen_at < now - 2 * WINDOW_SECONDS:
                    del self._seen[key]
            if signature in self._seen:
                raise SlackRequestRefused("this Slack request was received already: a replay is not answered twice")
            self._seen[signature] = now

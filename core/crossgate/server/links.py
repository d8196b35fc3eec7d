"""Signed decision links: what leaves the server in a notification and comes back in a click.

A link token is ``<claims>.<signature>``, both base64url: the claims are the canonical JSON of the
request id, its fingerprint, the decision kind, the expiry (Unix seconds) and the reviewer the link
was issued to; the signature is HMAC-SHA256 over the claims' text. Invariant 6 of DESIGN.md: the
server trusts nothing in the link it did not sign. Reuse needs no nonce store: a used link's request
is no longer pending, and the queue refuses a second decision.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from crossgate.errors import CrossgateError
from crossgate.fingerprint import canonical_json
from crossgate.model import DecisionKind

LINKABLE_DECISIONS = (DecisionKind.APPROVE, DecisionKind.REJECT)
"""Only these fit in a link; edit and respond need the page's form."""


class LinkError(CrossgateError):
    """A decision link cannot be used."""


class LinkTamperedError(LinkError):
    """The link's signature does not match its contents (HTTP 403)."""


class LinkExpiredError(LinkError):
    """The link's expiry has passed (HTTP 410)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkClaims:
    """What a signed link asserts."""

    request_id: str
    fingerprint: str
    decision: DecisionKind
    expires_at: int
    """Unix seconds."""
    reviewer: str

    def as_json(self) -> dict[str, str | int]:
        return {
            "r": self.request_id,
            "f": self.fingerprint,
            "d": self.decision.value,
            "e": self.expires_at,
            "v": self.reviewer,
        }


class LinkSigner:
    """Signs and verifies decision link tokens with one secret."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def sign(self, claims: LinkClaims) -> str:
        """The token for ``claims``."""
        if claims.decision not in LINKABLE_DECISIONS:
            raise LinkError(f"a link can carry approve or reject, not {claims.decision.value}")
        body = canonical_json(claims.as_json()).encode("utf-8")
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def verify(self, token: str, *, now: datetime | None = None) -> LinkClaims:
        """The claims of a genuine, unexpired token; LinkTamperedError or LinkExpiredError otherwise."""
        body_part, dot, sig_part = token.partition(".")
        if not dot:
            raise LinkTamperedError("this decision link is malformed; use the link exactly as it was sent")
        try:
            body = _unb64(body_part)
            signature = _unb64(sig_part)
        except (binascii.Error, ValueError) as exc:
            raise LinkTamperedError("this decision link is malformed; use the link exactly as it was sent") from exc
        if not hmac.compare_digest(signature, self._mac(body)):
            raise LinkTamperedError("this decision link was altered: its signature does not match its contents")
        try:
            raw = json.loads(body)
            claims = LinkClaims(
                request_id=str(raw["r"]),
                fingerprint=str(raw["f"]),
                decision=DecisionKind(raw["d"]),
                expires_at=int(raw["e"]),
                reviewer=str(raw["v"]),
            )
        except (ValueError, KeyError, TypeError) as exc:  # signed by us, so only a key change gets here
            raise LinkTamperedError("this decision link carries claims the server cannot read") from exc
        moment = now or datetime.now(UTC)
        if moment.timestamp() >= claims.expires_at:
            expired = datetime.fromtimestamp(claims.expires_at, UTC).isoformat(timespec="seconds")
            raise LinkExpiredError(f"this decision link expired at {expired}; open the request on the review page")
        return claims

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._secret, body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

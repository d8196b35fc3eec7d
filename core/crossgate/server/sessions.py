"""The page's sessions and one-time sign-in codes.

A session id is ``name.issued.nonce.mac``: the MAC is an HMAC-SHA256 keyed with the digest of the
reviewer's token, which only the server holds (from the tokens file or ``$CROSSGATE_TOKENS``). So the
cookie never carries the token, a server restarted with the same tokens accepts the sessions it
issued before, and changing a reviewer's token ends every session of theirs. Sessions last
:data:`SESSION_SECONDS`.

A sign-in code is a random string that signs its reviewer in once (the address ``crossgate serve``
prints); codes live in the server's memory and are gone after use or a restart.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Sequence

from crossgate.server.settings import Reviewer

SESSION_SECONDS = 12 * 3600
_PURPOSE = b"crossgate-session-v1\n"


def _mac(reviewer: Reviewer, name: str, issued: str, nonce: str) -> str:
    key = bytes.fromhex(reviewer.token_sha256)
    message = _PURPOSE + f"{name}\n{issued}\n{nonce}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def issue_session(reviewer: Reviewer, now: float | None = None) -> str:
    """A new session id for ``reviewer``."""
    name = base64.urlsafe_b64encode(reviewer.name.encode()).decode().rstrip("=")
    issued = str(int(time.time() if now is None else now))
    nonce = secrets.token_urlsafe(12)
    return f"{name}.{issued}.{nonce}.{_mac(reviewer, reviewer.name, issued, nonce)}"


def session_reviewer(value: str, reviewers: Sequence[Reviewer], now: float | None = None) -> Reviewer | None:
    """The reviewer whose session ``value`` is, or None: forged, expired, or their token changed."""
    parts = value.split(".")
    if len(parts) != 4 or not value.isascii():
        return None
    encoded, issued, nonce, mac = parts
    try:
        name = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        age = (time.time() if now is None else now) - int(issued)
    except ValueError:  # not base64, not UTF-8, not a number
        return None
    if not 0 <= age <= SESSION_SECONDS:
        return None
    reviewer = next((r for r in reviewers if r.name == name), None)
    if reviewer is None or not hmac.compare_digest(mac, _mac(reviewer, name, issued, nonce)):
        return None
    return reviewer


def session_nonce(value: str) -> str:
    """The part of a session id that names it, for ending it."""
    parts = value.split(".")
    return parts[2] if len(parts) == 4 else ""


class SignInCodes:
    """One-time sign-in codes, each for one reviewer, kept as digests in memory."""

    def __init__(self) -> None:
        self._codes: dict[str, str] = {}
        self._lock = threading.Lock()

    def issue(self, reviewer: str) -> str:
        """A new code that signs ``reviewer`` in once."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[hashlib.sha256(code.encode()).hexdigest()] = reviewer
        return code

    def redeem(self, code: str) -> str | None:
        """The reviewer ``code`` was issued for, once; None for an unknown or used code."""
        with self._lock:
            return self._codes.pop(hashlib.sha256(code.encode()).hexdigest(), None)

"""Idempotency keys of the agent API: the same key and body replay the first answer; another body is a 409.

The ledger keeps, per credential and key, what the key was first used for (a digest of the route and
the body) and the answer, in this server process, for ``RETENTION_SECONDS`` and at most ``MAX_ENTRIES``
keys. What must survive a restart does not depend on it: a request and a parked run carry the digest of
the key that created them in their owner stamp (see ``ownership``), so a retry after a restart finds
them in the store. A key is handled by one caller at a time (striped locks), so two concurrent
retries of one creation create one thing.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from pydantic import JsonValue

from crossgate.errors import ConflictError
from crossgate.fingerprint import canonical_json

RETENTION_SECONDS = 24 * 3600.0
MAX_ENTRIES = 20_000
MAX_KEY_LENGTH = 200
_STRIPES = 64


class IdempotencyConflictError(ConflictError):
    """This Idempotency-Key was used with another body or on another route (HTTP 409 ``idempotency_conflict``)."""


def body_digest(route: str, body: JsonValue) -> str:
    """The digest a key is bound to: the route it was used on and the canonical JSON of the body."""
    return hashlib.sha256(canonical_json({"route": route, "body": body}).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Answer:
    """The first answer given under a key: its status, and its body or the id of what to read again."""

    status: int
    body: JsonValue = None
    ref: str | None = None
    """For an answer that is a stored object (a parked run with its state): its id, read again on replay."""


@dataclass(frozen=True, slots=True)
class _Entry:
    digest: str
    answer: Answer
    at: float


class Ledger:
    """Answers by (owner, key), kept in this process; thread-safe."""

    def __init__(self, *, retention_seconds: float = RETENTION_SECONDS, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self.retention_seconds = retention_seconds
        self.max_entries = max_entries

    def hold(self, owner: str, key: str) -> threading.Lock:
        """The lock to hold while a key's operation runs."""
        return self._stripes[hash((owner, key)) % _STRIPES]

    def answer(self, owner: str, key: str, digest: str) -> Answer | None:
        """The first answer under ``key`` if it was for this digest; None if the key is new here.

        IdempotencyConflictError if the key was used for something else.
        """
        with self._lock:
            self._expire()
            entry = self._entries.get((owner, key))
        if entry is None:
            return None
        if entry.digest != digest:
            raise conflict()
        return entry.answer

    def keep(self, owner: str, key: str, digest: str, answer: Answer) -> None:
        """Remember the answer given under ``key``."""
        with self._lock:
            self._entries[(owner, key)] = _Entry(digest, answer, time.monotonic())
            self._entries.move_to_end((owner, key))
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.retention_seconds
        while self._entries:
            first = next(iter(self._entries.values()))
            if first.at >= cutoff:
                return
            self._entries.popitem(last=False)


def conflict() -> IdempotencyConflictError:
    """The refusal of a key reused for other input."""
    return IdempotencyConflictError("this Idempotency-Key was used with another body or on another route")

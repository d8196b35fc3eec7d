"""The hash chain over the event log: how events are sealed and how a log is verified."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from crossgate.errors import AuditHeadMissingError
from crossgate.fingerprint import canonical_json
from crossgate.model import Event, NewEvent, chained_text, trusted

GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first event."""


def seal(new: NewEvent, *, seq: int, prev_hash: str) -> Event:
    """Give ``new`` its place in the chain: sequence number, time, previous hash and own hash."""
    return sealed(new, seq=seq, prev_hash=prev_hash)[0]


def sealed(new: NewEvent, *, seq: int, prev_hash: str) -> tuple[Event, str, str]:
    """:func:`seal`, with the two texts it computed on the way: ``at`` in ISO 8601 and the payload's
    canonical JSON, for a store that keeps them as they are (no second serialisation of either)."""
    # Built without re-validation: every field comes from a validated NewEvent, or is the int and the
    # hex digests given and computed here. The hash is filled in before anyone else sees the event.
    at = new.at.isoformat()
    payload_text = canonical_json(new.payload)
    text = chained_text(new, seq=seq, at=at, prev_hash=prev_hash, payload_text=payload_text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    values = {
        "seq": seq,
        "at": new.at,
        "kind": new.kind,
        "request_id": new.request_id,
        "run": new.run,
        "actor": new.actor,
        "channel": new.channel,
        "payload": new.payload,
        "prev_hash": prev_hash,
        "hash": digest,
    }
    return trusted(Event, values), at, payload_text


def sealed_hash(new: NewEvent, *, seq: int, at: str, prev_hash: str) -> str:
    """``seal(new, seq=seq, prev_hash=prev_hash).hash``, without building the Event (``at``: ``new.at`` in
    ISO 8601)."""
    return hashlib.sha256(chained_text(new, seq=seq, at=at, prev_hash=prev_hash).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Result of :func:`verify_chain`: ``ok``, how many events were checked, and the first problem.

    A check against signed checkpoints (:func:`crossgate.checkpoints.verify_signed_log`) also says how
    many checkpoints verified and the highest event one of them covers (``anchored_at``).
    """

    ok: bool
    checked: int
    problem: str | None = None
    bad_seq: int | None = None
    checkpoints: int = 0
    anchored_at: int | None = None


def verify_chain(
    events: Iterable[Event], head: tuple[int, str] | None = None, *, start: tuple[int, str] = (0, GENESIS_HASH)
) -> AuditReport:
    """Check that the events form one unbroken chain from ``start`` (the genesis hash) up to ``head``.

    Detects a changed event (its hash no longer matches), a removed event (a gap in ``seq``, a
    ``prev_hash`` that points elsewhere, or a chain that stops short of the head the store recorded
    separately) and reordered events. ``start`` is the ``(seq, hash)`` the first event follows, to check
    only the part of a log after a known event.
    """
    prev_hash = start[1]
    expected_seq = start[0] + 1
    checked = 0
    for event in events:
        if event.seq != expected_seq:
            return AuditReport(False, checked, f"expected event {expected_seq}, found {event.seq}", event.seq)
        if event.prev_hash != prev_hash:
            return AuditReport(False, checked, f"event {event.seq} does not follow event {event.seq - 1}", event.seq)
        recomputed = hashlib.sha256(event.chained_text().encode("utf-8")).hexdigest()
        if recomputed != event.hash:
            return AuditReport(False, checked, f"event {event.seq} was changed after it was written", event.seq)
        prev_hash = event.hash
        expected_seq += 1
        checked += 1
    if head is not None and head != (expected_seq - 1, prev_hash):
        problem = f"the log ends at event {expected_seq - 1} but its recorded head is event {head[0]}"
        return AuditReport(False, checked, problem, head[0])
    return AuditReport(True, checked)


class ChainedLog(Protocol):
    """What :func:`verify_log` reads: a store, or the log a review server handed out."""

    def list_events(self) -> list[Event]:
        """Every event, in order."""

    def audit_head(self) -> tuple[int, str]:
        """The head recorded apart from the events; AuditHeadMissingError when it is gone."""


def verify_log(store: ChainedLog) -> AuditReport:
    """Check ``store``'s whole log against the head it records apart; a missing head is a broken log."""
    events = store.list_events()
    try:
        head = store.audit_head()
    except AuditHeadMissingError as exc:
        return AuditReport(False, verify_chain(events).checked, str(exc))
    return verify_chain(events, head=head)

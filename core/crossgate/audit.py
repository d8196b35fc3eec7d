"""The hash chain over the event log: how events are sealed and how a log is verified."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from crossgate.errors import AuditHeadMissingError
from crossgate.fingerprint import canonical_json
from crossgate.model import Event, NewEvent, chained_text, trusted

GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first event."""


Head = tuple[int, int, str]
"""One partition's chain head: ``(partition, seq, hash)``; ``(partition, 0, GENESIS_HASH)`` while it is empty."""


def heads_root(heads: Sequence[Head]) -> str:
    """What a checkpoint or a state head signs for a log's ``heads`` (one per partition): with one chain,
    its head's hash, as always; with several, sha256 over the canonical JSON list of ``[partition, seq,
    hash]`` of the partitions that have events, in partition order, so that a rolled-back or rewritten
    partition changes it (and raising N, which adds empty partitions, does not). An empty log's is the
    genesis hash, whatever N."""
    listed = [[p, seq, digest] for p, seq, digest in sorted(heads) if seq > 0]
    if len(heads) == 1 or not listed:
        return heads[0][2] if listed else GENESIS_HASH
    return hashlib.sha256(canonical_json(listed).encode("utf-8")).hexdigest()


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


class PartitionedLog(Protocol):
    """A log that can be read with every partition's head in one snapshot (PostgreSQL's store)."""

    def audit_snapshot(self) -> tuple[int, list[Head], list[Event]]:
        """The watermark, every partition's head as of it, and every event up to it."""


def read_log(store: ChainedLog) -> tuple[list[Event], list[Head] | None, AuditHeadMissingError | None]:
    """``store``'s events and heads, one snapshot where it can give one; the error when a head is gone."""
    snapshot = getattr(store, "audit_snapshot", None)
    if snapshot is not None:
        try:
            _, heads, events = snapshot()
        except AuditHeadMissingError as exc:
            return store.list_events(), None, exc
        return events, heads, None
    events = store.list_events()
    try:
        seq, digest = store.audit_head()
    except AuditHeadMissingError as exc:
        return events, None, exc
    return events, [(0, seq, digest)], None


def verify_read(events: list[Event], heads: Sequence[Head]) -> AuditReport:
    """:func:`verify_chain` for one partition, :func:`verify_partitioned` for several."""
    if len(heads) == 1:
        return verify_chain(events, head=(heads[0][1], heads[0][2]))
    return verify_partitioned(events, heads)


def verify_log(store: ChainedLog) -> AuditReport:
    """Check ``store``'s whole log against the heads it records apart (every partition's); a missing head
    is a broken log."""
    events, heads, missing = read_log(store)
    if heads is None:
        return AuditReport(False, verify_chain(events).checked, str(missing))
    return verify_read(events, heads)


class Chains:
    """A partitioned log's events linked into their chains, checked against the partitions' heads.

    Each event follows the one before it in its own chain (``prev_hash``), with seqs growing along it but
    not dense (a PostgreSQL store with N > 1 takes them from one sequence for all partitions). ``report``
    says whether every event is where its hash and its predecessor put it and every chain ends at its
    partition's recorded head; :meth:`root_at` is the root of the heads as they were at a seq, which a
    checkpoint of that seq signed.
    """

    def __init__(self, events: Iterable[Event], heads: Sequence[Head]) -> None:
        self.heads = sorted(heads)
        self._chains: list[list[tuple[int, str]]] = []
        self.report = self._link(events)

    def _link(self, events: Iterable[Event]) -> AuditReport:
        tails: dict[str, int] = {}  # hash of a chain's last event -> the chain's index
        last, checked = 0, 0
        for event in events:
            if event.seq <= last:
                return AuditReport(False, checked, f"event {event.seq} comes after event {last}", event.seq)
            if hashlib.sha256(event.chained_text().encode("utf-8")).hexdigest() != event.hash:
                return AuditReport(False, checked, f"event {event.seq} was changed after it was written", event.seq)
            if event.prev_hash == GENESIS_HASH:
                chain = len(self._chains)
                self._chains.append([])
            elif (found := tails.pop(event.prev_hash, None)) is not None:
                chain = found
            else:
                problem = f"event {event.seq} follows no event of its chain (one was removed, changed or moved)"
                return AuditReport(False, checked, problem, event.seq)
            self._chains[chain].append((event.seq, event.hash))
            tails[event.hash] = chain
            last, checked = event.seq, checked + 1
        ends = {(chain[-1][0], chain[-1][1]) for chain in self._chains}
        recorded = {(seq, digest) for _, seq, digest in self.heads if seq > 0}
        for partition, seq, digest in self.heads:
            if seq > 0 and (seq, digest) not in ends:
                problem = f"partition {partition}'s recorded head is event {seq}, but no chain of the log ends there"
                return AuditReport(False, checked, problem, seq)
        for seq, _ in sorted(ends - recorded):
            return AuditReport(False, checked, f"a chain of the log ends at event {seq}, which no head records", seq)
        return AuditReport(True, checked)

    def root_at(self, seq: int) -> str:
        """The root of the heads as of ``seq``: each partition's last event at or below it (its chain found by
        the partition's head), over every partition the log has now."""
        by_end = {(chain[-1][0], chain[-1][1]): chain for chain in self._chains if chain}
        cut: list[Head] = []
        for partition, head_seq, digest in self.heads:
            chain = by_end.get((head_seq, digest), [])
            below = [entry for entry in chain if entry[0] <= seq]
            cut.append((partition, *below[-1]) if below else (partition, 0, GENESIS_HASH))
        return heads_root(cut)


def verify_partitioned(events: Iterable[Event], heads: Sequence[Head]) -> AuditReport:
    """Check a log kept in several chains against its partitions' ``heads`` (see :class:`Chains`)."""
    return Chains(events, heads).report

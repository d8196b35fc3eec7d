"""Signed audit checkpoints: the authority vouches for the chain head, so a writer of the database cannot
rewrite the log unseen.

The hash chain alone has no key: whoever can write the database can cut it, reset it, edit an event and
rehash everything after it, or append a well-hashed forgery. A checkpoint is the authority's token over
one chain head (``crossgate.audit_checkpoint.v1``: ``seq``, ``head_hash``, ``at``, ``authored``), kept in
the store and exported outside it (``crossgate audit checkpoint``). Two kinds:

- **authored**: signed by the process that appended event ``seq`` itself, right after it did, for the
  events only the authority's holders write (:data:`SIGNED_KINDS`: a decision, an approval of several, a
  standing rule added, a policy version). A queue that holds an :class:`~crossgate.authority.Authority`
  signs one after each of them.
- **head**: the head as the store shows it, signed on a timer by ``crossgate serve`` and by ``crossgate
  audit checkpoint``, only after the chain's hashes check out since the last good checkpoint.

:func:`verify_signed_log` then refuses a log in which a checkpoint does not verify with the pinned keys, a
checkpoint covers an event that is gone (a cut tail, a reset log) or that hashes otherwise (an edited
event, whatever was rehashed after it), or an event of :data:`SIGNED_KINDS` has no authored checkpoint (a
forged decision, well hashed or not). What it cannot see: events after the last checkpoint exported that
were cut along with the stored checkpoints covering them, and forged events of the kinds the agent writes
itself (a submission, an outcome), which no signature covers. See docs/security.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from crossgate.audit import (
    GENESIS_HASH,
    AuditReport,
    ChainedLog,
    Chains,
    read_log,
    verify_chain,
    verify_read,
)
from crossgate.authority.claims import CheckpointClaims, PolicyVersionClaims
from crossgate.clock import Clock, utc_now
from crossgate.errors import AuditHeadMissingError, ConfigurationError, SignatureError, StoreError
from crossgate.model import Event
from crossgate.stores.base import Checkpoint, PolicyVersion, Store

if TYPE_CHECKING:
    from crossgate.authority import Authority, TrustedKeys

log = logging.getLogger(__name__)

SIGNED_KINDS = frozenset({"decided", "approved", "rule_added", "policy_applied"})
"""Events only the authority's holders write: each needs an authored checkpoint at its own seq."""
EXPORT_FORMAT = "crossgate-checkpoint/1"
DEFAULT_INTERVAL_SECONDS = 60.0
"""How often ``crossgate serve`` signs the head, when it moved."""


def sign_checkpoint(
    authority: Authority, seq: int, head_hash: str, *, at: datetime, authored: bool = False
) -> Checkpoint:
    """A checkpoint of the head ``(seq, head_hash)``, signed by ``authority``."""
    claims = CheckpointClaims(seq=seq, head_hash=head_hash, at=at, authored=authored)
    return Checkpoint(seq=seq, head_hash=head_hash, at=claims.at, token=authority.sign(claims), authored=authored)


class Checkpointer:
    """Signs and stores the checkpoints of one store with one authority."""

    def __init__(
        self, store: Store, authority: Authority, *, trusted: TrustedKeys | None = None, clock: Clock = utc_now
    ) -> None:
        self.store = store
        self.authority = authority
        self.trusted = trusted or authority.trusted_keys()
        """Keys the stored checkpoints are read with (a keyring's, so rotated keys still count)."""
        self._clock = clock

    def authored(self, event: Event) -> Checkpoint | None:
        """Sign and store the checkpoint of ``event``, which this process has just appended.

        The event is committed already, so a store failure here is logged, not raised: the decision (or
        rule, or version) stands, and ``audit verify --authority`` will name the event that lacks it.
        """
        checkpoint = sign_checkpoint(self.authority, event.seq, event.hash, at=self._clock(), authored=True)
        try:
            self.store.insert_checkpoint(checkpoint)
        except StoreError as exc:
            log.warning("crossgate: could not store the signed checkpoint of event %s: %s", event.seq, exc)
            return None
        return checkpoint

    def sign_head(self) -> Checkpoint:
        """Sign and store the current head, once its chain checks out since the last good checkpoint.

        Returns that checkpoint, or the latest one when the head has not moved since. StoreError, and
        nothing signed, when the chain is broken: the authority never vouches for a log it cannot check.
        """
        snapshot = getattr(self.store, "audit_snapshot", None)
        if snapshot is not None and getattr(self.store, "partitions", lambda: 1)() > 1:
            return self._sign_heads(snapshot())
        latest = self._latest_good()
        start = (latest.seq, latest.head_hash) if latest is not None else (0, GENESIS_HASH)
        events = self.store.list_events(after=start[0])
        report = verify_chain(events, start=start)
        if not report.ok:
            raise StoreError(f"the audit log is broken ({report.problem}); refusing to sign its head")
        if not events and latest is not None:
            return latest
        seq, head_hash = (events[-1].seq, events[-1].hash) if events else start
        checkpoint = sign_checkpoint(self.authority, seq, head_hash, at=self._clock())
        self.store.insert_checkpoint(checkpoint)
        return checkpoint

    def _sign_heads(self, snapshot: tuple[int, list[tuple[int, int, str]], list[Event]]) -> Checkpoint:
        """Sign the root of a partitioned log's heads, once every chain checks out (read whole: the chains
        are checked from their start each time, unlike one chain's, which goes on from the last checkpoint)."""
        upto, heads, events = snapshot
        chains = Chains(events, heads)
        if not chains.report.ok:
            raise StoreError(f"the audit log is broken ({chains.report.problem}); refusing to sign its heads")
        # The heads as of the watermark: every event up to it is committed, so a verifier finds the same root.
        checkpoint = sign_checkpoint(self.authority, upto, chains.root_at(upto), at=self._clock())
        self.store.insert_checkpoint(checkpoint)
        return checkpoint

    def _latest_good(self) -> Checkpoint | None:
        """The newest stored checkpoint that verifies and still matches its event; None if there is none."""
        for checkpoint in reversed(self.store.list_checkpoints()):
            try:
                claims = self.trusted.verify_checkpoint(checkpoint.token)
            except SignatureError:
                continue
            if claims.seq == 0 or _hash_at(self.store, claims.seq) == claims.head_hash:
                return Checkpoint(claims.seq, claims.head_hash, claims.at, checkpoint.token, claims.authored)
        return None


def _hash_at(store: Store, seq: int) -> str | None:
    """The hash event ``seq`` has, recomputed from its content; None when there is no such event."""
    found = store.list_events(after=seq - 1, limit=1)
    if not found or found[0].seq != seq:
        return None
    return hashlib.sha256(found[0].chained_text().encode("utf-8")).hexdigest()


class CheckpointTimer:
    """Signs the head every ``interval`` seconds while it moves, on a daemon thread (``crossgate serve``)."""

    def __init__(self, checkpointer: Checkpointer, interval: float = DEFAULT_INTERVAL_SECONDS) -> None:
        if not interval > 0:
            raise ConfigurationError(f"the checkpoint interval must be a positive number of seconds, got {interval}")
        self.checkpointer = checkpointer
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="crossgate-checkpoints", daemon=True)
        self._signed: int | None = None

    def start(self) -> None:
        """Sign once now, then every interval."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread after one last checkpoint of the head."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def tick(self) -> Checkpoint | None:
        """Sign the head if it moved since the last tick; None when it did not. Failures are logged."""
        try:
            if self._signed is not None and self.checkpointer.store.audit_head()[0] == self._signed:
                return None
            checkpoint = self.checkpointer.sign_head()
        except (StoreError, AuditHeadMissingError) as exc:
            log.error("crossgate: no audit checkpoint signed: %s", exc)
            return None
        self._signed = checkpoint.seq
        return checkpoint

    def _loop(self) -> None:
        self.tick()
        while not self._stop.wait(self.interval):
            self.tick()
        self.tick()


def export_checkpoint(checkpoint: Checkpoint) -> str:
    """The checkpoint as one line of JSON to keep outside the database (``crossgate audit checkpoint``).

    Only ``token`` counts when it is read back (:func:`read_exported`); the other fields are for people.
    """
    document = {
        "format": EXPORT_FORMAT,
        "seq": checkpoint.seq,
        "head_hash": checkpoint.head_hash,
        "at": checkpoint.at.isoformat(),
        "authored": checkpoint.authored,
        "token": checkpoint.token,
    }
    return json.dumps(document, separators=(",", ":"))


def read_exported(text: str, *, source: str = "the checkpoint") -> str:
    """The token of an exported checkpoint: the JSON :func:`export_checkpoint` writes, or a bare token."""
    text = text.strip()
    if not text.startswith("{"):
        return text
    try:
        document = json.loads(text)
    except ValueError:
        raise ConfigurationError(f"{source} is not an exported crossgate checkpoint (not JSON)") from None
    token = document.get("token") if isinstance(document, dict) else None
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT or not isinstance(token, str):
        raise ConfigurationError(f"{source} is not an exported crossgate checkpoint (format {EXPORT_FORMAT})")
    return token


class SignedLog(ChainedLog, Protocol):
    """What :func:`verify_signed_log` reads: a store, or what a review server handed out of one."""

    def list_checkpoints(self) -> list[Checkpoint]:
        """Every stored checkpoint, oldest first."""

    def list_policy_versions(self) -> list[PolicyVersion]:
        """Every stored policy version, oldest first."""


def verify_signed_log(
    store: SignedLog, trusted: TrustedKeys, *, exported: Sequence[str] = (), since: int = 0
) -> AuditReport:
    """Check ``store``'s log against the authority: its hash chain, then every signed checkpoint.

    ``exported`` are tokens of checkpoints kept outside the database (see :func:`read_exported`); they
    are what catches a cut tail or a reset along with the stored checkpoints. Events up to ``since``
    predate the authority: only their hashes are checked. The first problem found is the report's.
    """
    events, heads, missing = read_log(store)
    if heads is None:
        return AuditReport(False, verify_chain(events).checked, str(missing))
    chain = verify_read(events, heads)
    if not chain.ok:
        return chain
    # Several partitions: a checkpoint of the heads signed their root; an authored one, its event's hash.
    root_at = Chains(events, heads).root_at if len(heads) > 1 else None
    found = _checkpoint_claims(store, trusted, exported)
    if isinstance(found, AuditReport):
        return found
    hashes = {event.seq: event.hash for event in events}
    last = events[-1].seq if events else 0
    for origin, claims in found:
        problem = _covered(claims, hashes, last, origin, root_at)
        if problem is not None:
            return AuditReport(False, chain.checked, problem, claims.seq, len(found))
    if events and not found:
        return AuditReport(
            False,
            chain.checked,
            "no signed checkpoint ties this log to the authority (sign one: crossgate audit checkpoint)",
        )
    authored = {claims.seq for _, claims in found if claims.authored}
    for event in events:
        if event.seq > since and event.kind in SIGNED_KINDS:
            problem = _signed_event_problem(event, authored, trusted)
            if problem is not None:
                return AuditReport(False, chain.checked, problem, event.seq, len(found))
    problem, seq = _policy_versions_problem(store, events, trusted)
    if problem is not None:
        return AuditReport(False, chain.checked, problem, seq, len(found))
    anchored = max((claims.seq for _, claims in found), default=None)
    return AuditReport(True, chain.checked, checkpoints=len(found), anchored_at=anchored)


def _checkpoint_claims(
    store: SignedLog, trusted: TrustedKeys, exported: Sequence[str]
) -> list[tuple[str, CheckpointClaims]] | AuditReport:
    """Every checkpoint's claims, the exported ones first; a failed report at the first that does not verify."""
    found: list[tuple[str, CheckpointClaims]] = []
    for token in exported:
        try:
            found.append(("the exported", trusted.verify_checkpoint(token)))
        except SignatureError as exc:
            return AuditReport(False, 0, f"the exported checkpoint does not verify: {exc}")
    for checkpoint in store.list_checkpoints():
        try:
            found.append(("a stored", trusted.verify_checkpoint(checkpoint.token)))
        except SignatureError as exc:
            return AuditReport(
                False, 0, f"the stored checkpoint of event {checkpoint.seq} does not verify: {exc}", checkpoint.seq
            )
    return found


def _covered(
    claims: CheckpointClaims,
    hashes: dict[int, str],
    last: int,
    origin: str,
    root_at: Callable[[int], str] | None = None,
) -> str | None:
    when = claims.at.isoformat(timespec="seconds")
    if claims.seq > last:
        return (
            f"{origin} checkpoint signed at {when} covers event {claims.seq}, but the log ends at event {last}: "
            "events were removed (a cut tail or a reset log)"
        )
    signed = GENESIS_HASH if claims.seq == 0 else hashes.get(claims.seq)
    if signed != claims.head_hash and (root_at is None or root_at(claims.seq) != claims.head_hash):
        return f"event {claims.seq} is not the event {origin} checkpoint signed at {when}: the log was rewritten"
    return None


def _policy_versions_problem(
    store: SignedLog, events: Sequence[Event], trusted: TrustedKeys
) -> tuple[str | None, int | None]:
    """Every stored policy version verifies and was applied by an event; every applied version is still stored."""
    from crossgate.policy.versions import POLICY_APPLIED, verify_policy_version

    applied = {e.payload.get("version"): e for e in events if e.kind == POLICY_APPLIED}
    stored = {v.version: v for v in store.list_policy_versions()}
    for number, version in stored.items():
        try:
            verify_policy_version(version, trusted)
        except SignatureError as exc:
            return str(exc), None
        event = applied.get(number)
        if event is None or event.payload.get("digest") != version.digest:
            return f"stored policy version {number} was not applied by any event of this log", None
    for missing, event in applied.items():
        if missing not in stored:
            gone = f"policy version {missing}, applied in event {event.seq}, is gone from the store (a rollback)"
            return gone, event.seq
    return None, None


def _signed_event_problem(event: Event, authored: set[int], trusted: TrustedKeys) -> str | None:
    who = f"{event.kind} by {event.actor}" if event.actor else event.kind
    if event.seq not in authored:
        return (
            f"event {event.seq} ({who}) has no checkpoint signed by the process that wrote it: "
            "it was forged, or its checkpoint was removed"
        )
    if event.kind == "policy_applied":
        token, version = event.payload.get("token"), event.payload.get("version")
        try:
            claims = trusted.verify(token if isinstance(token, str) else "", PolicyVersionClaims)
        except SignatureError as exc:
            return f"event {event.seq} records policy version {version} with a token that does not verify: {exc}"
        if claims.version != version or claims.digest != event.payload.get("digest"):
            return f"event {event.seq} records policy version {version}, but its token signs version {claims.version}"
    return None

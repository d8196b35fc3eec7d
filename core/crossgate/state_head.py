"""The signed state head: the authority vouches, for a few minutes, for the newest state of the store.

Signatures prove who decided, not that what the store shows is the newest state: a writer of the store
could delete the newest policy version, un-revoke a standing rule or set an applied request back to
decided. A **state head** (``crossgate.state_head.v1``, :class:`~crossgate.authority.StateHeadClaims`)
is the authority's token over the current policy version (number and digest), the revoked standing
rules and credentials, the audit head and the approvals already consumed, with a short ``expires_at``.
The store keeps the newest head of each signing key (``kid``): a process holding another key (a
generated one) files its heads under its own kid and replaces nobody's.

Every :class:`~crossgate.queue.ReviewQueue` holding the authority's key signs a fresh head when it
starts and whenever it writes a revocation or a policy version (a decision or a standing rule: unless it
signed one in the last second, :meth:`HeadSigner.sign_soon`), and
``crossgate serve`` refreshes it on a timer (:class:`StateHeadTimer`). Gates remember the newest head
in their own file (``crossgate.adapter``) and refuse what it shows stale. A signer never vouches for
less than it (or the stored heads of its trusted keys, or its own head file) vouched for before: a
policy version older than the last head's, a rule or credential revoked before, an approval consumed
before, stay in the next head. The server keeps its newest head in a file of its own
(:meth:`HeadSigner.keep_in`), so a restarted server still refuses what a rolled-back store shows again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from crossgate.authority._jws import token_kid
from crossgate.authority.claims import CredentialClaims, DecisionClaims, StateHeadClaims
from crossgate.authority.consumed import GrowingFilter, filter_bytes, in_filter, merge_filters
from crossgate.clock import Clock, utc_now
from crossgate.errors import AuditHeadMissingError, ConfigurationError, SignatureError, StoreError
from crossgate.model import DecisionKind, Event, StandingRule
from crossgate.stores.base import Store

if TYPE_CHECKING:
    from crossgate.adapter._heads import HeadFile
    from crossgate.authority import Authority, TrustedKeys
    from crossgate.stores.base import PolicyVersion
    from crossgate.stores.credentials import Credential

log = logging.getLogger(__name__)

DEFAULT_REFRESH_SECONDS = 5.0
"""How often ``crossgate serve`` signs a fresh head (``ServerSettings.state_head_every``)."""
DEFAULT_LIFETIME_SECONDS = 300.0
"""How long a head is valid after it is signed (``ServerSettings.state_head_lifetime``): a gate that sees
nothing newer for that long refuses every call (a frozen store)."""
DECISION_HEAD_SECONDS = 1.0
"""A decision signs a fresh head only when none was signed for this long (:meth:`HeadSigner.sign_soon`)."""
PRUNE_EVERY = timedelta(minutes=1)
"""How often a signer rebuilds its consumed filter without the approvals that lapsed."""
_APPLIED_KINDS = frozenset({DecisionKind.APPROVE.value, DecisionKind.EDIT.value})


def read_state_head(token: str | None, trusted: TrustedKeys, kid: str | None = None) -> StateHeadClaims | None:
    """The claims of a stored head's ``token``; None when there is none or it does not verify.

    With ``kid`` (the key it was filed under), a head signed with another key is ignored too: a writer of
    the store gains nothing by filing one key's head under another's kid.
    """
    if not token:
        return None
    if kid is not None and (signed_by := token_kid(token)) != kid:
        log.warning("crossgate: ignoring a state head filed under key %s but signed with key %s", kid, signed_by)
        return None
    try:
        return trusted.verify(token, StateHeadClaims)
    except SignatureError as exc:
        log.warning("crossgate: ignoring a state head that does not verify: %s", exc)
        return None


@dataclass
class HeadSigner:
    """Builds, signs and stores the state heads of one store with one authority (thread-safe)."""

    store: Store
    authority: Authority
    trusted: TrustedKeys | None = None
    """Keys the stored heads and decisions are read with (a keyring's, so rotated keys still count); the
    authority's own key is always among them."""
    clock: Clock = utc_now
    lifetime_seconds: float = DEFAULT_LIFETIME_SECONDS
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _floor: tuple[int, str] | None = field(default=None, repr=False)
    """The newest policy version (number, digest) signed or adopted: a head never names an older one."""
    _consumed: dict[str, datetime | None] = field(default_factory=dict, repr=False)
    """Request id -> signed ``apply_by`` (None: never lapses) of the approvals this signer saw applied."""
    _carried: tuple[bytes, int, datetime | None] | None = field(default=None, repr=False)
    """The consumed filter of heads other signers stored (bits, count, until; None until: for good)."""
    _signed: str | None = field(default=None, repr=False)
    _signed_at: datetime | None = field(default=None, repr=False)
    _seen: dict[str, str] = field(default_factory=dict, repr=False)
    """Kid -> the stored head last read under it (adopted once per token)."""
    _memory: HeadFile | None = field(default=None, repr=False)
    _revoked_credentials: set[str] = field(default_factory=set, repr=False)
    _credential_checked: dict[tuple[str, str], bool] = field(default_factory=dict, repr=False)
    """(credential id, signature) -> whether the row's signature verified (a forged row revokes nothing)."""
    _filter: GrowingFilter = field(default_factory=GrowingFilter, repr=False)
    _pruned: datetime | None = field(default=None, repr=False)
    _rebuild_needed: bool = field(default=False, repr=False)
    _revoked: set[str] = field(default_factory=set, repr=False)
    _scanned: tuple[int, str] | None = field(default=None, repr=False)
    _policy: tuple[PolicyVersion, int, str] | None = field(default=None, repr=False)
    _rules: tuple[int, dict[str, StandingRule]] | None = field(default=None, repr=False)
    """The store's standing rules (revoked ones too) as of a rules version."""

    def __post_init__(self) -> None:
        if not self.lifetime_seconds > 0:
            raise ConfigurationError(
                f"a state head's lifetime must be a positive number of seconds, not {self.lifetime_seconds}"
            )
        if self.trusted is None:
            self.trusted = self.authority.trusted_keys()
        elif self.authority.kid not in self.trusted.kids:
            self.trusted = self.trusted.including(self.authority.public_key)

    def sign(self) -> StateHeadClaims:
        """Sign the state as the store shows it now (never less than signed before), store it, return it."""
        with self._lock:
            now = self.clock()
            self._adopt_stored(now)
            seq, head_hash = self._scan()
            carried = self._consumed_now(now)
            ends = list(self._consumed.values()) + ([carried[2]] if carried is not None else [])
            version, digest = self._current_policy()
            rules_version = self.store.rules_version()
            claims = StateHeadClaims(
                issued_at=now,
                expires_at=now + timedelta(seconds=self.lifetime_seconds),
                policy_version=version,
                policy_digest=digest,
                rules_version=rules_version,
                revoked_rules=tuple(sorted(self._revoked_now(now, rules_version))),
                audit_seq=seq,
                audit_hash=head_hash,
                consumed=self._filter.encoded(),
                consumed_count=len(self._consumed) + (carried[1] if carried is not None else 0),
                consumed_until=None if None in ends or not ends else max(e for e in ends if e is not None),
                revoked_credentials=tuple(sorted(self._revoked_credentials_now())),
            )
            self._signed = self._seen[self.authority.kid] = self.authority.sign(claims)
            self._signed_at = now
            if self._memory is not None:
                signed = self._signed
                self._memory.write(lambda _stored: signed)
            self.store.put_state_head(self.authority.kid, self._signed, claims.issued_at)
            return claims

    def sign_logged(self) -> StateHeadClaims | None:
        """:meth:`sign`, with a store failure logged, not raised: what was just written stands, the next head
        names it, and gates refuse nothing more than a head that ages (they fail closed when it expires)."""
        try:
            return self.sign()
        except StoreError as exc:
            log.warning("crossgate: could not store a fresh state head: %s", exc)
            return None

    def sign_soon(self, within: float = DECISION_HEAD_SECONDS) -> StateHeadClaims | None:
        """:meth:`sign_logged`, unless this signer signed a head less than ``within`` seconds ago.

        For writes that change nothing a head vouches for but the audit head (a decision): what a gate
        checks (policy version, revoked rules and credentials, consumed approvals) is as the last head
        says, and the server's timer signs the next one anyway. Revocations and policy versions sign at once.
        """
        signed_at = self._signed_at
        if signed_at is not None and self.clock() - signed_at < timedelta(seconds=within):
            return None
        return self.sign_logged()

    @property
    def memory(self) -> HeadFile | None:
        """The file this signer remembers its heads in (see :meth:`keep_in`); None: only its process does."""
        return self._memory

    def keep_in(self, memory: HeadFile) -> None:
        """Remember every head signed in ``memory`` (the server's own file, not the store) and adopt what the
        head there vouches for: a restarted server forgets no revocation, consumed approval or policy version."""
        with self._lock:
            self._memory = memory
            self._adopt(read_state_head(memory.read(), self._keys), self.clock())

    # What this signer knows, whatever the store shows now (the server checks what it answers against it).
    def consumed(self, request_id: str) -> bool:
        """True when an approval of ``request_id`` was applied, as this signer saw or adopted it."""
        with self._lock:
            if request_id in self._consumed:
                return True
            carried = self._carried
            return carried is not None and in_filter(carried[0], request_id)

    def credential_revoked(self, credential_id: str) -> bool:
        """True when the stored credential ``credential_id`` was revoked or rotated away, as signed or adopted."""
        with self._lock:
            return credential_id in self._revoked_credentials

    @property
    def policy_floor(self) -> tuple[int, str] | None:
        """The newest policy version (number, digest) signed or adopted; None while there is none."""
        with self._lock:
            return self._floor

    def knows_policy(self, stored: PolicyVersion, digest: str) -> None:
        """Take ``stored`` as verified (its signer just signed it as ``digest``): not verified again here."""
        self._policy = (stored, stored.version, digest)

    @property
    def _keys(self) -> TrustedKeys:
        assert self.trusted is not None  # set in __post_init__
        return self.trusted

    def _adopt_stored(self, now: datetime) -> None:
        """Adopt the stored head of each trusted key (a rotated key's, another signer's) that changed."""
        keys = self._keys
        for kid in keys.kids:
            if kid in keys.revoked:
                continue
            stored = self.store.get_state_head(kid)
            if stored is None or self._seen.get(kid) == stored:
                continue
            self._seen[kid] = stored
            self._adopt(read_state_head(stored, keys, kid), now)

    def _adopt(self, stored: StateHeadClaims | None, now: datetime) -> None:
        """Take in what a head another signer stored vouches for (so signers converge, none forgets)."""
        if stored is None:
            return
        until = stored.consumed_until
        if stored.consumed_count and (until is None or until > now):
            self._rebuild_needed = True
            bits = filter_bytes(stored.consumed)
            if self._carried is None:
                self._carried = (bits, stored.consumed_count, until)
            else:
                old_bits, count, old_until = self._carried
                later = None if until is None or old_until is None else max(until, old_until)
                self._carried = (merge_filters(old_bits, bits), max(count, stored.consumed_count), later)
        self._revoked.update(stored.revoked_rules)
        self._revoked_credentials.update(stored.revoked_credentials)
        if stored.policy_version is not None and stored.policy_digest is not None:
            self._raise_floor(stored.policy_version, stored.policy_digest)
        if self._scanned is None:
            self._scanned = (stored.audit_seq, stored.audit_hash)

    def _consumed_now(self, now: datetime) -> tuple[bytes, int, datetime | None] | None:
        """Drop what lapsed (from the filter at most once a minute: a lapsed approval runs nothing anyway)."""
        for request_id, apply_by in list(self._consumed.items()):
            if apply_by is not None and apply_by <= now:
                del self._consumed[request_id]
        carried = self._carried
        if carried is not None and carried[2] is not None and carried[2] <= now:
            carried = self._carried = None
        if self._pruned is None or now - self._pruned >= PRUNE_EVERY or self._rebuild_needed:
            self._filter.rebuild(self._consumed, carried[0] if carried is not None else b"")
            self._pruned, self._rebuild_needed = now, False
        return carried

    def _consume_all(self, events: list[Event]) -> None:
        for event in events:
            if event.kind == "applied" and event.payload.get("kind") in _APPLIED_KINDS:
                self._consume(event)

    def _scan(self) -> tuple[int, str]:
        """Read the events since the last scan for approvals applied; the last event read (the audit head)."""
        start = self._scanned
        snapshot = getattr(self.store, "audit_snapshot", None)
        if snapshot is not None:
            # A store that reads its heads and events in one snapshot (PostgreSQL): the audit value is the
            # root of its heads as of the watermark (with one partition, the head's hash, as below).
            try:
                # The head first: every event up to its watermark is committed, so the snapshot read after
                # it holds them all (and maybe more, consumed as well).
                head = self.store.audit_head()
                _, _, events = snapshot(after=start[0] if start else 0)
            except AuditHeadMissingError:
                pass  # read as below: the events, and the genesis for a head
            else:
                self._consume_all(events)
                if start is None or head[0] > start[0]:  # never back: the watermark may dip while writes run
                    self._scanned = head
                return self._scanned or head
        events = self.store.list_events(after=start[0] if start else 0)
        self._consume_all(events)
        if events:
            self._scanned = (events[-1].seq, events[-1].hash)
        elif start is None:
            try:
                self._scanned = self.store.audit_head()
            except AuditHeadMissingError:
                from crossgate.audit import GENESIS_HASH

                self._scanned = (0, GENESIS_HASH)
        assert self._scanned is not None
        return self._scanned

    def _consume(self, event: Event) -> None:
        request_id = event.request_id
        if request_id is None or request_id in self._consumed:
            return
        request = self.store.get_request(request_id)
        windows: list[datetime | None] = []
        for token in request.signatures if request is not None else ():
            try:
                windows.append(self._keys.verify(token, DecisionClaims).apply_by)
            except SignatureError:
                continue  # it cannot let anything run at a gate anyway
        ends = [end for end in windows if end is not None]
        # Kept while any of its approvals could still apply: for good when one never lapses (or none verified).
        apply_by = max(ends) if ends and len(ends) == len(windows) else None
        self._consumed[request_id] = apply_by
        self._filter.add(request_id)

    def _current_policy(self) -> tuple[int | None, str | None]:
        """The store's current policy version, verified; the last head's when the store shows less (rollback)."""
        from crossgate.policy.versions import verify_policy_version

        stored = self.store.get_policy_version()
        found: tuple[int, str] | None = None
        if stored is not None:
            cached = self._policy
            if cached is not None and cached[0] == stored:
                found = (cached[1], cached[2])
            else:
                try:
                    verified = verify_policy_version(stored, self._keys)
                except SignatureError as exc:
                    log.error("crossgate: the state head keeps the last policy version signed: %s", exc)
                else:
                    found = (verified.version.version, verified.claims.digest)
                    self._policy = (stored, *found)
        if found is not None:
            self._raise_floor(*found)
        floor = self._floor
        if floor is not None and (found is None or found[0] < floor[0]):
            if found is not None or stored is None:
                log.error(
                    "crossgate: the store shows policy version %s, older than version %s already signed (a rollback)",
                    found[0] if found else None,
                    floor[0],
                )
            return floor
        return found if found is not None else (None, None)

    def _raise_floor(self, version: int, digest: str) -> None:
        if self._floor is None or version > self._floor[0]:
            self._floor = (version, digest)

    def _revoked_now(self, now: datetime, rules_version: int) -> Iterable[str]:
        """Revoked rules that would still stand otherwise: the store's, and those signed revoked before.

        The store's rules are read again only when ``rules_version`` (read before them) moved: every rule
        added or revoked bumps it in the same transaction, so an unchanged version means unchanged rules.
        """
        cached = self._rules
        if cached is not None and cached[0] == rules_version:
            rules = cached[1]
        else:
            rules = {rule.id: rule for rule in self.store.list_rules(include_revoked=True)}
            self._rules = (rules_version, rules)
        self._revoked.update(rule_id for rule_id, rule in rules.items() if rule.revoked_at is not None)
        for rule_id in list(self._revoked):
            rule = rules.get(rule_id)
            if rule is not None and rule.expires_at is not None and rule.expires_at <= now:
                self._revoked.discard(rule_id)  # past its own expiry: it covers nothing any more
        return self._revoked

    def _revoked_credentials_now(self) -> set[str]:
        """Credentials revoked: the store's (rows the authority signed), and those signed revoked before."""
        from crossgate.stores.credentials import CredentialStore

        if isinstance(self.store, CredentialStore):
            for credential in self.store.list_credentials(include_revoked=True):
                known = credential.id in self._revoked_credentials
                if not known and credential.revoked_at is not None and self._credential_signed(credential):
                    self._revoked_credentials.add(credential.id)
        return self._revoked_credentials

    def _credential_signed(self, credential: Credential) -> bool:
        key = (credential.id, credential.signature)
        known = self._credential_checked.get(key)
        if known is None:
            try:
                known = self._keys.verify(credential.signature, CredentialClaims).id == credential.id
            except SignatureError:
                known = False
            self._credential_checked[key] = known
        return known


class StateHeadTimer:
    """Signs a fresh head every ``interval`` seconds on a daemon thread (``crossgate serve``)."""

    def __init__(self, signer: HeadSigner, interval: float = DEFAULT_REFRESH_SECONDS) -> None:
        if not interval > 0:
            raise ConfigurationError(f"the state head interval must be a positive number of seconds, got {interval}")
        if interval >= signer.lifetime_seconds:
            raise ConfigurationError(
                f"the state head interval ({interval:g} s) must be shorter than its lifetime "
                f"({signer.lifetime_seconds:g} s), or gates would see it expire between refreshes"
            )
        self.signer = signer
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="crossgate-state-head", daemon=True)

    def start(self) -> None:
        """Sign once now, then every interval."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def tick(self) -> StateHeadClaims | None:
        """Sign a fresh head; None (logged) when the store failed."""
        return self.signer.sign_logged()

    def _loop(self) -> None:
        self.tick()
        while not self._stop.wait(self.interval):
            self.tick()

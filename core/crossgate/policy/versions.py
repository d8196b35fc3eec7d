"""One policy, stored and signed: versions applied by an operator, evaluated by every process.

``crossgate policy apply FILE`` (or :func:`apply_policy`) stores the next version of the policy with the
authority's token over it (``crossgate.policy_version.v1``: the version number and the digest of the
policy's canonical JSON) and a ``policy_applied`` event that records who changed it and the diff. A
:class:`~crossgate.ReviewQueue` built without a policy of its own evaluates the store's current version
(:class:`PolicySource`), verified with the public keys the process pins (never keys from the store):

- a version that does not verify (an edited document, a token of another key, a replaced row) is refused:
  the queue evaluates :func:`refusing_policy` instead, which denies every call with the refusal as the
  reason, so nothing is allowed, approved or applied under it; the refusal is recorded once as a
  ``policy_refused`` event;
- a version older than one this process already verified, or none after one, is refused too (a rollback);
- no stored version: the default policy (every call asks a person), as before there were versions.

A queue given a ``Policy`` evaluates that one (development, tests) and logs once that it ignores the store's.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from crossgate.authority.claims import PolicyVersionClaims, policy_version_claims
from crossgate.clock import Clock, utc_now
from crossgate.errors import ConfigurationError, SignatureError, StoreError
from crossgate.fingerprint import canonical_json
from crossgate.model import Event, JsonObject, NewEvent, VerdictKind
from crossgate.policy.rules import Policy, PolicyRule
from crossgate.stores.base import PolicyVersion, Store

if TYPE_CHECKING:
    from crossgate.authority import Authority, TrustedKeys

log = logging.getLogger(__name__)

POLICY_APPLIED = "policy_applied"
POLICY_REFUSED = "policy_refused"
DIFF_LIMIT = 16_000
"""How many characters of a version's text diff its ``policy_applied`` event keeps; the documents are kept whole."""
_SETTINGS = tuple(name for name in Policy.model_fields if name != "rules")


def policy_document(policy: Policy) -> str:
    """The canonical JSON of ``policy``: what a version stores, and what its digest covers."""
    return canonical_json(policy.model_dump(mode="json"))


def policy_from_document(document: str, *, version: int | None = None) -> Policy:
    """The policy in a stored document; SignatureError (``malformed``) if it is not one."""
    try:
        return Policy.model_validate(json.loads(document))
    except (ValueError, ValidationError, TypeError) as exc:
        what = f"stored policy version {version}" if version is not None else "the stored policy"
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else "not JSON"
        raise SignatureError(f"{what} is not a policy document ({first})", reason="malformed") from None


def policy_text(policy: Policy) -> str:
    """A readable YAML form of ``policy`` that ``crossgate policy apply`` reads back as the same policy."""
    data: dict[str, Any] = {"version": 1, **policy.model_dump(mode="json", exclude_defaults=True)}
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return text


@dataclass(frozen=True, slots=True)
class PolicyDiff:
    """What changed between two policies: rules by name, settings by field, and a text diff."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    moved: bool = False
    """The rules both have are in another order (order decides which rule's reason is given)."""
    settings: tuple[str, ...] = ()
    text: str = ""

    @property
    def empty(self) -> bool:
        """True when the two policies are the same."""
        return not (self.added or self.removed or self.changed or self.moved or self.settings)

    def summary(self) -> JsonObject:
        """The diff without its text, for JSON output and audit events."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "moved": self.moved,
            "settings": list(self.settings),
        }


def policy_diff(old: Policy | None, new: Policy, *, old_name: str = "before", new_name: str = "after") -> PolicyDiff:
    """How ``new`` differs from ``old`` (None: from no policy at all)."""
    before: dict[str, PolicyRule] = {r.name: r for r in old.rules} if old is not None else {}
    after = {r.name: r for r in new.rules}
    kept_before = [name for name in before if name in after]
    kept_after = [name for name in after if name in before]
    settings = [] if old is None else [s for s in _SETTINGS if getattr(old, s) != getattr(new, s)]
    old_text = policy_text(old).splitlines(keepends=True) if old is not None else []
    lines = difflib.unified_diff(old_text, policy_text(new).splitlines(keepends=True), old_name, new_name)
    return PolicyDiff(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        changed=tuple(name for name in kept_after if before[name] != after[name]),
        moved=kept_before != kept_after,
        settings=tuple(settings),
        text="".join(lines),
    )


@dataclass(frozen=True, slots=True)
class VerifiedPolicy:
    """A stored policy version whose token verified: the policy to evaluate and what was signed."""

    policy: Policy
    version: PolicyVersion
    claims: PolicyVersionClaims


def verify_policy_version(stored: PolicyVersion, trusted: TrustedKeys) -> VerifiedPolicy:
    """Check ``stored``: its document parses and is exactly the policy signed as its version number.

    The digest is taken over the policy as parsed, the one that would be evaluated. SignatureError
    (with its reason) otherwise.
    """
    policy = policy_from_document(stored.document, version=stored.version)
    try:
        claims = trusted.verify_policy_version(stored.token, version=stored.version, document=policy)
    except SignatureError as exc:
        raise SignatureError(f"stored policy version {stored.version} is refused: {exc}", reason=exc.reason) from None
    return VerifiedPolicy(policy, stored, claims)


def load_current_policy(store: Store, trusted: TrustedKeys) -> VerifiedPolicy | None:
    """The store's current policy version, verified with ``trusted``; None when no version is stored.

    SignatureError when the current version does not verify: the caller must not evaluate anything then.
    """
    stored = store.get_policy_version()
    return None if stored is None else verify_policy_version(stored, trusted)


@dataclass(frozen=True, slots=True)
class Applied:
    """What :func:`apply_policy` did: the version now current, its event (None when unchanged), the diff."""

    version: PolicyVersion
    diff: PolicyDiff
    event: Event | None = None

    @property
    def unchanged(self) -> bool:
        """True when the policy was the current version already and nothing was stored."""
        return self.event is None


def apply_policy(
    store: Store,
    authority: Authority,
    policy: Policy,
    *,
    created_by: str,
    source: str | None = None,
    channel: str = "cli",
    clock: Clock = utc_now,
) -> Applied:
    """Store ``policy`` as the next version, signed by ``authority``, with a ``policy_applied`` event.

    The event names ``created_by``, the signing key, the previous version and the diff from it, and gets
    an authored checkpoint. A policy equal to the current version stores nothing. ConflictError if another
    version was stored meanwhile (apply again to build on it).
    """
    from crossgate.checkpoints import Checkpointer

    current = store.get_policy_version()
    previous = _previous_policy(current)
    if current is not None and previous is not None and current.digest == _digest(policy) and previous == policy:
        return Applied(current, PolicyDiff())
    number = current.version + 1 if current is not None else 1
    old_name = f"version {current.version}" if current is not None else "no policy"
    diff = policy_diff(previous, policy, old_name=old_name, new_name=f"version {number}")
    claims = policy_version_claims(version=number, document=policy, created_by=created_by, created_at=clock())
    token = authority.sign(claims)
    version = PolicyVersion(
        version=number,
        document=policy_document(policy),
        token=token,
        digest=claims.digest,
        created_by=created_by,
        created_at=claims.created_at,
        source=source,
    )
    payload: JsonObject = {
        "version": number,
        "digest": claims.digest,
        "previous_version": current.version if current is not None else None,
        "previous_digest": current.digest if current is not None else None,
        "kid": authority.kid,
        "token": token,
        "source": source,
        "changes": diff.summary(),
        "diff": diff.text if len(diff.text) <= DIFF_LIMIT else diff.text[: DIFF_LIMIT - 1] + "…",
    }
    event = NewEvent(kind=POLICY_APPLIED, at=claims.created_at, actor=created_by, channel=channel, payload=payload)
    sealed = store.insert_policy_version(version, event)
    Checkpointer(store, authority, clock=clock).authored(sealed)
    from crossgate.state_head import HeadSigner

    signer = HeadSigner(store, authority, clock=clock)
    signer.knows_policy(version, claims.digest)
    signer.sign_logged()  # gates refuse an older version from now on
    return Applied(version, diff, sealed)


def _digest(policy: Policy) -> str:
    from crossgate.authority.claims import policy_digest

    return policy_digest(policy)


def _previous_policy(current: PolicyVersion | None) -> Policy | None:
    if current is None:
        return None
    try:
        return policy_from_document(current.document, version=current.version)
    except SignatureError:
        return None  # a document that does not parse: the diff is from nothing, and the version replaces it


REFUSED_RULE = "stored-policy-refused"


def refusing_policy(problem: str) -> Policy:
    """What a queue evaluates while the store's policy is refused: one rule that denies every call.

    A deny rule, not a default, so that nothing a reviewer remembered (a standing allow) can lift it. The
    reason is what the model reads: the call did not run, and why.
    """
    reason = f"crossgate refused this call without running it: {problem}. An operator must apply a signed policy."
    return Policy(rules=(PolicyRule(name=REFUSED_RULE, verdict=VerdictKind.DENY, tool="*", reason=reason),))


@dataclass
class PolicySource:
    """Where a queue's policy comes from: a local ``Policy``, or the store's current signed version.

    ``at(key)`` is called with the store's ``rules_version()`` on each evaluation; the stored version is
    read again only when that number moved (a policy version stored bumps it; on PostgreSQL every event
    does), and parsed and verified again only when the row read differs from the one verified last, so
    an unchanged store costs nothing. ``trusted`` None: ``TrustedKeys.from_env()``, read when a stored
    version is first found.
    """

    store: Store
    local: Policy | None = None
    trusted: TrustedKeys | None = None
    clock: Clock = utc_now
    _cache: tuple[int, tuple[Policy, int | None] | Callable[[], ConfigurationError]] | None = field(
        default=None, repr=False
    )
    _seen: int = field(default=0, repr=False)
    _verified: VerifiedPolicy | None = field(default=None, repr=False)
    _recorded: set[str] = field(default_factory=set, repr=False)
    _warned: bool = field(default=False, repr=False)

    def at(self, key: int) -> tuple[Policy, int | None]:
        """The policy to evaluate now, and its stored version number (None for a local or default policy).

        A stored version that is refused gives :func:`refusing_policy` (every call denied, with the
        refusal as the reason). ConfigurationError when a version is stored and no key is pinned.
        """
        if self.local is not None:
            self._warn_if_shadowing()
            return self.local, None
        cached = self._cache
        if cached is None or cached[0] != key:
            found: tuple[Policy, int | None] | Callable[[], ConfigurationError]
            try:
                verified = self._load()
                found = (Policy(), None) if verified is None else (verified.policy, verified.version.version)
            except SignatureError as exc:
                found = (refusing_policy(str(exc)), None)
            except ConfigurationError as exc:
                message = str(exc)
                found = lambda: ConfigurationError(message)  # noqa: E731 (a fresh error per caller)
            cached = self._cache = (key, found)
        result = cached[1]
        if callable(result):
            raise result()
        return result

    def evaluated(self, key: Callable[[], int]) -> tuple[bool, int | None, str | None]:
        """What was evaluated last: (a local policy?, its stored version, that version's digest).

        Reads nothing when a policy was evaluated already; else evaluates at ``key()``. A refused or
        missing stored version gives (False, None, None).
        """
        if self.local is not None:
            return True, None, None
        if self._cache is None:
            try:
                self.at(key())
            except ConfigurationError:
                return False, None, None
        cached = self._cache
        result = cached[1] if cached is not None else None
        if not isinstance(result, tuple) or result[1] is None or self._verified is None:
            return False, None, None
        return False, result[1], self._verified.claims.digest

    def _load(self) -> VerifiedPolicy | None:
        stored = self.store.get_policy_version()
        if stored is None:
            if self._seen:
                raise self._refused(
                    None, f"policy version {self._seen} was verified here, and the store now holds no policy (rollback)"
                )
            return None
        if stored.version < self._seen:
            raise self._refused(
                stored,
                f"the store's current policy is version {stored.version}, older than version {self._seen} "
                "already verified here (rollback)",
            )
        if self._verified is not None and self._verified.version == stored:
            return self._verified  # the same row as last time: no need to parse and verify it again
        try:
            verified = verify_policy_version(stored, self._keys(stored))
        except SignatureError as exc:
            raise self._refused(stored, str(exc), exc.reason) from None
        self._seen = max(self._seen, stored.version)
        self._verified = verified
        return verified

    def _keys(self, stored: PolicyVersion) -> TrustedKeys:
        if self.trusted is None:
            from crossgate.authority import TrustedKeys

            self.trusted = TrustedKeys.from_env()
        if self.trusted is None:
            raise ConfigurationError(
                f"the store holds signed policy version {stored.version}, and this process pins no authority "
                "public key to verify it: set CROSSGATE_AUTHORITY_PUBKEY (or _FILE), or give the queue a "
                "local policy for development"
            )
        return self.trusted

    def _refused(self, stored: PolicyVersion | None, problem: str, reason: str = "binding") -> SignatureError:
        """The refusal, recorded once per stored version as a ``policy_refused`` event."""
        key = f"{stored.version}:{stored.token}" if stored is not None else "none"
        if key not in self._recorded:
            self._recorded.add(key)
            payload: JsonObject = {"version": stored.version if stored else None, "reason": reason, "problem": problem}
            try:
                self.store.append_event(
                    NewEvent(kind=POLICY_REFUSED, at=self.clock(), actor="crossgate", channel="policy", payload=payload)
                )
            except StoreError as exc:
                log.warning("crossgate: could not record the refused policy: %s", exc)
        return SignatureError(problem, reason=reason)

    def _warn_if_shadowing(self) -> None:
        if self._warned:
            return
        self._warned = True
        try:
            stored = self.store.get_policy_version()
        except StoreError:
            return
        if stored is not None:
            log.warning(
                "crossgate: this queue evaluates a local policy (development); "
                "the store's signed policy version %s is not used",
                stored.version,
            )

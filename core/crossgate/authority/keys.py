"""The authority's key pair, and the public keys an agent pins to verify what the authority signed.

:class:`Authority` holds an Ed25519 private key and signs claims; only the review server and an
operator hold one. :class:`TrustedKeys` holds public keys only, by key id, plus revoked key ids; it is
built from the agent's own configuration (an argument, ``$CROSSGATE_AUTHORITY_PUBKEY`` or the file named
by ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``) and never from the store.

A key id (``kid``) is the RFC 7638 JWK thumbprint of the public key, so a kid names exactly one key.
The pin text accepted by :meth:`TrustedKeys.parse` is any mix, separated by whitespace, commas or lines,
with ``#`` comments, of ``ed25519:<base64url key>`` (what ``crossgate keys show`` prints), a bare
base64 or base64url key, a PEM ``PUBLIC KEY`` block, and ``revoked:<kid>``; or a keyring JSON file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, overload

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ValidationError

from crossgate.authority import _jws
from crossgate.authority.claims import (
    CLAIMS_TYPES,
    CheckpointClaims,
    Claims,
    CredentialClaims,
    DecisionClaims,
    PolicyVersionClaims,
    StandingRuleClaims,
    StateHeadClaims,
    policy_digest,
    standing_rule_claims,
)
from crossgate.decisions import AnyDecision
from crossgate.errors import ConfigurationError, RequestExpiredError, SignatureError
from crossgate.fingerprint import canonical_json
from crossgate.model import DecisionKind, StandingRule

PUBKEY_ENV = "CROSSGATE_AUTHORITY_PUBKEY"
"""The pinned public key(s), as pin text."""
PUBKEY_FILE_ENV = "CROSSGATE_AUTHORITY_PUBKEY_FILE"
"""A file holding the pinned public key(s): pin text or a keyring JSON."""
PIN_PREFIX = "ed25519:"
REVOKED_PREFIX = "revoked:"

C = TypeVar(
    "C", DecisionClaims, StandingRuleClaims, PolicyVersionClaims, CheckpointClaims, CredentialClaims, StateHeadClaims
)
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----", re.DOTALL)
_COMMENT = re.compile(r"#[^\n]*")


class PublicKey:
    """One Ed25519 public key and its kid."""

    __slots__ = ("key", "kid", "raw")

    def __init__(self, key: Ed25519PublicKey) -> None:
        self.key = key
        self.raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        jwk = {"crv": "Ed25519", "kty": "OKP", "x": _jws.b64encode(self.raw)}
        self.kid = _jws.b64encode(hashlib.sha256(canonical_json(jwk).encode("ascii")).digest())

    @classmethod
    def parse(cls, text: str) -> PublicKey:
        """One key from ``ed25519:<base64url>``, bare base64 or base64url, or a PEM ``PUBLIC KEY`` block."""
        text = text.strip()
        if text.startswith("-----BEGIN"):
            try:
                key = serialization.load_pem_public_key(text.encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise ConfigurationError("the PEM block is not a public key") from None
            if not isinstance(key, Ed25519PublicKey):
                raise ConfigurationError("the PEM public key is not an Ed25519 key")
            return cls(key)
        body = text.removeprefix(PIN_PREFIX)
        try:
            raw = base64.urlsafe_b64decode(body.replace("+", "-").replace("/", "_") + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 32 or not re.fullmatch(r"[A-Za-z0-9_+/-]+=*", body):
            shown = text if len(text) <= 24 else text[:20] + "…"
            raise ConfigurationError(f"not an Ed25519 public key: {shown!r} (expected {PIN_PREFIX}<base64url>)")
        return cls(Ed25519PublicKey.from_public_bytes(raw))

    @property
    def pin(self) -> str:
        """The one-line form to pin: ``ed25519:<base64url of the 32-byte key>``."""
        return PIN_PREFIX + _jws.b64encode(self.raw)

    def pem(self) -> str:
        """The key as a PEM ``PUBLIC KEY`` block."""
        data = self.key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        return data.decode("ascii")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicKey) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"PublicKey(kid={self.kid!r})"


class Authority:
    """Holds the private signing key: signs decisions, standing rules, policy versions and checkpoints.

    The process being gated must never hold one; see docs/security.md.
    """

    __slots__ = ("_header", "_key", "public_key")

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.public_key = PublicKey(private_key.public_key())
        self._header = _jws.header_for(self.public_key.kid)

    @classmethod
    def generate(cls) -> Authority:
        """A fresh key pair in memory (tests, notebooks, a single-process demo)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Authority:
        """The key in a private key PEM file, or the current key of a keyring directory.

        Refuses a file that other users can read or write (ConfigurationError, one line).
        """
        target = Path(path)
        if target.is_dir():
            from crossgate.authority.keyring import Keyring

            return Keyring.open(target).authority()
        return cls.from_pem(read_private_file(target), source=str(target))

    @classmethod
    def from_pem(cls, data: bytes, *, source: str = "the key") -> Authority:
        """An authority from an unencrypted PKCS#8 PEM Ed25519 private key."""
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(f"{source} is not an unencrypted PEM private key ({exc})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigurationError(f"{source} is not an Ed25519 private key")
        return cls(key)

    @property
    def kid(self) -> str:
        """The key id every token this authority signs names."""
        return self.public_key.kid

    def private_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM, for writing to an owner-only file."""
        return self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def sign(self, claims: Claims) -> str:
        """A JWS compact token (alg EdDSA, this kid) over the canonical JSON of ``claims``."""
        return _jws.sign(self._key, self._header, claims.payload())

    def trusted_keys(self) -> TrustedKeys:
        """TrustedKeys that trust this authority's public key alone."""
        return TrustedKeys([self.public_key])

    def __repr__(self) -> str:
        return f"Authority(kid={self.kid!r})"


class TrustedKeys:
    """Pinned public keys by kid, and revoked kids; verifies tokens and what they are bound to.

    Every ``verify*`` method raises :class:`~crossgate.errors.SignatureError`, whose ``reason`` is one of
    ``malformed``, ``algorithm`` (anything but EdDSA, ``none`` included), ``unknown_key``,
    ``revoked_key``, ``bad_signature``, ``wrong_type`` (claims of another kind) or ``binding`` (signed
    for another request, call, rule, policy or chain head).
    """

    __slots__ = ("_keys", "revoked")

    def __init__(self, keys: Iterable[PublicKey], *, revoked: Iterable[str] = ()) -> None:
        self._keys = {key.kid: key for key in keys}
        self.revoked = frozenset(revoked)
        if not self._keys:
            raise ConfigurationError("no authority public key to trust")

    @classmethod
    def parse(cls, text: str) -> TrustedKeys:
        """Keys from pin text or a keyring JSON document (see the module docstring)."""
        if text.lstrip().startswith("{"):
            from crossgate.authority.keyring import KeyringFile

            return KeyringFile.parse(text).trusted_keys()
        keys: list[PublicKey] = []
        for block in _PEM_BLOCK.finditer(text):
            if block.group(1) != "PUBLIC KEY":
                raise ConfigurationError(
                    f"found a PEM {block.group(1)}; pin only the public key (crossgate keys show prints it)"
                )
            keys.append(PublicKey.parse(block.group(0)))
        revoked: list[str] = []
        rest = _COMMENT.sub(" ", _PEM_BLOCK.sub(" ", text))
        for item in rest.replace(",", " ").split():
            if item.startswith(REVOKED_PREFIX):
                revoked.append(item.removeprefix(REVOKED_PREFIX))
            else:
                keys.append(PublicKey.parse(item))
        return cls(keys, revoked=revoked)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TrustedKeys:
        """Keys from a pin file or a keyring JSON file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"cannot read the authority public key file {path}: {exc}") from None
        return cls.parse(text)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TrustedKeys | None:
        """Keys from ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``; None if neither."""
        env = os.environ if environ is None else environ
        value, file = env.get(PUBKEY_ENV), env.get(PUBKEY_FILE_ENV)
        if value and file:
            raise ConfigurationError(f"set {PUBKEY_ENV} or {PUBKEY_FILE_ENV}, not both")
        if value:
            return cls.parse(value)
        return cls.from_file(file) if file else None

    def including(self, key: PublicKey) -> TrustedKeys:
        """These keys and ``key`` (a signer reads its own heads whatever else it trusts)."""
        return TrustedKeys([*self._keys.values(), key], revoked=self.revoked)

    @property
    def kids(self) -> tuple[str, ...]:
        """The kids of every pinned key, revoked ones included."""
        return tuple(self._keys)

    def key(self, kid: str) -> Ed25519PublicKey:
        """The pinned key named ``kid``; SignatureError if it is revoked or not pinned."""
        if kid in self.revoked:
            raise SignatureError(f"the token is signed with revoked key {kid}", reason="revoked_key")
        key = self._keys.get(kid)
        if key is None:
            raise SignatureError(f"the token is signed with key {kid}, which is not pinned", reason="unknown_key")
        return key.key

    @overload
    def verify(self, token: str) -> Claims: ...
    @overload
    def verify(self, token: str, expected: type[C]) -> C: ...
    def verify(self, token: str, expected: type[BaseModel] | None = None) -> Claims:
        """The claims ``token`` carries, of the ``expected`` kind, once its signature checks out."""
        return parse_claims(_jws.verify(token, self.key), expected)

    def verify_decision(
        self,
        token: str,
        *,
        request_id: str,
        fingerprint: str,
        decision: AnyDecision | None = None,
        now: datetime | None = None,
    ) -> DecisionClaims:
        """A decision signed for request ``request_id`` on the call with ``fingerprint``.

        With ``decision`` (as stored), its kind, reviewer and content must be what was signed. With
        ``now``, an approve or edit past its ``apply_by`` raises RequestExpiredError: it was real, and lapsed.
        """
        claims = self.verify(token, DecisionClaims)
        if claims.request_id != request_id:
            raise _binding(f"the decision was signed for request {claims.request_id}, not {request_id}")
        if claims.fingerprint != fingerprint:
            raise _binding(
                f"the decision was signed for call {claims.fingerprint[:12]}…, not {fingerprint[:12]}… "
                f"(request {request_id})"
            )
        if decision is not None and (differ := claims.differences(decision)):
            raise _binding(
                f"the stored decision on request {request_id} differs from the signed one: {', '.join(differ)}"
            )
        if (
            now is not None and claims.apply_by is not None and now > claims.apply_by
        ):  # as the queue: lapsed once past it
            raise RequestExpiredError(
                f"the approval of request {request_id} lapsed at {claims.apply_by.isoformat()} before it was applied"
            )
        return claims

    def verify_approvals(
        self, tokens: Sequence[str], *, request_id: str, fingerprint: str, required: int, now: datetime | None = None
    ) -> tuple[DecisionClaims, ...]:
        """``required`` signed approvals of one request by different reviewers (a request needing several).

        Each token must be an approve: an edit, reject or respond among them is refused. The approvals
        needed are the more of ``required`` and the count each approval was signed under.
        """
        approvals = [self.verify_decision(t, request_id=request_id, fingerprint=fingerprint, now=now) for t in tokens]
        for claims in approvals:
            if claims.kind is not DecisionKind.APPROVE:
                raise _binding(
                    f"request {request_id} has a signed {claims.kind.value} by {claims.reviewer}, not an approval"
                )
        # The count signed with the approvals binds too: lowering the stored one changes nothing.
        required = max(required, *(c.approvals_required for c in approvals)) if approvals else required
        reviewers = {c.reviewer for c in approvals}
        if len(reviewers) < required:
            raise _binding(
                f"request {request_id} needs signed approvals by {required} different reviewers, has {len(reviewers)}"
            )
        return tuple(approvals)

    def verify_standing_rule(self, token: str, rule: StandingRule) -> StandingRuleClaims:
        """A standing rule's signature, and that ``rule`` as stored is exactly the rule signed."""
        claims = self.verify(token, StandingRuleClaims)
        stored = standing_rule_claims(rule)
        if claims != stored:
            differ = ", ".join(_differing(claims.model_dump(), stored.model_dump()))
            raise _binding(f"standing rule {rule.id} differs from the rule signed as {claims.rule_id}: {differ}")
        return claims

    def verify_policy_version(
        self, token: str, *, version: int, document: Mapping[str, Any] | BaseModel
    ) -> PolicyVersionClaims:
        """A policy version's signature, and that ``document`` is the policy signed as ``version``."""
        claims = self.verify(token, PolicyVersionClaims)
        if claims.version != version:
            raise _binding(f"the policy was signed as version {claims.version}, not {version}")
        if claims.digest != policy_digest(document):
            raise _binding(f"policy version {version} is not the document that was signed")
        return claims

    def verify_checkpoint(
        self, token: str, *, seq: int | None = None, head_hash: str | None = None
    ) -> CheckpointClaims:
        """An audit checkpoint's signature, and, when given, that it is for this chain head."""
        claims = self.verify(token, CheckpointClaims)
        if seq is not None and claims.seq != seq:
            raise _binding(f"the checkpoint is for event {claims.seq}, not {seq}")
        if head_hash is not None and claims.head_hash != head_hash:
            raise _binding(f"the checkpoint's head hash is not the hash of event {claims.seq}")
        return claims

    def __repr__(self) -> str:
        return f"TrustedKeys(kids={list(self._keys)!r}, revoked={sorted(self.revoked)!r})"


def parse_claims(payload: str, expected: type[BaseModel] | None = None) -> Claims:
    """The claims in a verified token's payload text; SignatureError unless canonical and of ``expected``."""
    try:
        data = json.loads(payload)
    except ValueError:
        raise SignatureError("malformed token: its payload is not JSON", reason="malformed") from None
    typ = data.get("typ") if isinstance(data, dict) else None
    cls = CLAIMS_TYPES.get(typ) if isinstance(typ, str) else None
    if cls is None:
        raise SignatureError(f"the token carries no crossgate claims (typ {typ!r})", reason="wrong_type")
    if expected is not None and cls is not expected:
        want = expected.model_fields["typ"].default
        raise SignatureError(f"the token is a {typ}, not a {want}", reason="wrong_type")
    try:
        claims = cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise SignatureError(f"malformed token: {typ} payload: {first['msg']}", reason="malformed") from None
    if claims.payload() != payload:
        raise SignatureError("malformed token: its payload is not canonical JSON", reason="malformed")
    return claims


def read_private_file(path: Path) -> bytes:
    """The bytes of a private key file, refused (one line) if other users may read or write it."""
    return read_owner_only(path, "the authority private key")


def read_owner_only(path: Path, what: str) -> bytes:
    """The bytes of a file holding a secret (``what`` names it), refused (one line) if other users may read
    or write it; ConfigurationError too when it cannot be read (FileNotFoundError passes through)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigurationError(f"cannot read {what} {path}: {exc.strerror}") from None
    if os.name == "posix" and mode & 0o077:
        raise ConfigurationError(
            f"refusing {what} {path}: other users may read or change it "
            f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}"
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {what} {path}: {exc.strerror}") from None


def _differing(signed: Mapping[str, Any], stored: Mapping[str, Any], prefix: str = "") -> list[str]:
    found: list[str] = []
    for name, value in signed.items():
        if value == stored[name]:
            continue
        if isinstance(value, dict) and isinstance(stored[name], dict) and value.keys() == stored[name].keys():
            found += _differing(value, stored[name], f"{prefix}{name}.")
        else:
            found.append(prefix + name)
    return found


def _binding(message: str) -> SignatureError:
    return SignatureError(message, reason="binding")

"""JWS compact serialisation (RFC 7515) with EdDSA over Ed25519 (RFC 8037), and nothing else.

Written out rather than taken from a JOSE library: crossgate needs one algorithm, one header shape and
strict refusals, and a general library's job is to accept more (other algorithms, keys named by the
token itself through ``jwk``/``jku``/``x5u``, ``crit`` extensions). Here the header may hold only
``alg`` (which must be ``EdDSA``) and ``kid``; the key is always the caller's pinned one.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from crossgate.errors import SignatureError
from crossgate.fingerprint import canonical_json

ALGORITHM = "EdDSA"
MAX_TOKEN_LENGTH = 64 * 1024
"""Longer tokens are refused before any parsing: no signed crossgate payload comes near it."""

_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")
_HEADER_FIELDS = frozenset({"alg", "kid"})
_SIGNATURE_LENGTH = 64


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64encode(data: bytes) -> str:
    """base64url without padding, as JWS writes every segment."""
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")


def b64decode(segment: str, what: str) -> bytes:
    """Decode one base64url segment; refuse padding, other alphabets and non-canonical trailing bits.

    Two encodings that differ only in unused trailing bits decode to the same bytes, so a decoder that
    accepted both would let a changed token verify: the segment must be exactly what encoding gives.
    """
    if not _SEGMENT.fullmatch(segment):
        raise _malformed(f"its {what} is not base64url")
    padded = (segment + "=" * (-len(segment) % 4)).encode("ascii").translate(_FROM_URLSAFE)
    try:
        data = binascii.a2b_base64(padded, strict_mode=True)
    except (binascii.Error, ValueError):
        raise _malformed(f"its {what} is not base64url") from None
    if b64encode(data) != segment:
        raise _malformed(f"its {what} is not canonical base64url")
    return data


def header_for(kid: str) -> str:
    """The encoded header of every token signed under ``kid``."""
    return b64encode(canonical_json({"alg": ALGORITHM, "kid": kid}).encode("utf-8"))


def sign(key: Ed25519PrivateKey, header: str, payload: str) -> str:
    """The compact JWS of ``payload`` (a JSON text) under the encoded ``header``, signed with ``key``."""
    signing_input = f"{header}.{b64encode(payload.encode('utf-8'))}"
    return f"{signing_input}.{b64encode(key.sign(signing_input.encode('ascii')))}"


def verify(token: str, key_for: Callable[[str], Ed25519PublicKey]) -> str:
    """The payload text of ``token`` once its signature checks out with ``key_for(kid)``.

    ``key_for`` raises SignatureError for an unknown or revoked kid. Order of checks: shape, header
    (algorithm first), key, signature; the payload is decoded only after the signature is good.
    """
    if not isinstance(token, str) or not token:
        raise _malformed("it is empty")
    if len(token) > MAX_TOKEN_LENGTH:
        raise _malformed(f"it is longer than {MAX_TOKEN_LENGTH} characters")
    parts = token.split(".")
    if len(parts) != 3:
        raise _malformed("it is not three base64url segments joined by '.' (JWS compact)")
    header_part, payload_part, signature_part = parts
    if not _SEGMENT.fullmatch(payload_part):
        raise _malformed("its payload is not base64url")
    kid = _kid_of(header_part)
    key = key_for(kid)
    signature = b64decode(signature_part, "signature")
    if len(signature) != _SIGNATURE_LENGTH:
        raise SignatureError("the token's signature is not an Ed25519 signature", reason="bad_signature")
    try:
        key.verify(signature, f"{header_part}.{payload_part}".encode("ascii"))
    except InvalidSignature:
        raise SignatureError(
            f"the token's signature does not verify with the pinned key {kid}", reason="bad_signature"
        ) from None
    try:
        return b64decode(payload_part, "payload").decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("its payload is not UTF-8") from None


def token_kid(token: str) -> str | None:
    """The kid ``token``'s header names, unverified (where a token is filed); None when it names none."""
    try:
        return _kid_of(token.split(".", 1)[0])
    except SignatureError:
        return None


def _header(segment: str) -> dict[str, Any]:
    try:
        header = json.loads(b64decode(segment, "header"))
    except (ValueError, UnicodeDecodeError):
        raise _malformed("its header is not JSON") from None
    if not isinstance(header, dict):
        raise _malformed("its header is not a JSON object")
    alg = header.get("alg")
    if alg != ALGORITHM:
        raise SignatureError(
            f"the token uses algorithm {alg!r}; only {ALGORITHM} (Ed25519) is accepted", reason="algorithm"
        )
    extra = sorted(set(header) - _HEADER_FIELDS)
    if extra:
        raise _malformed(f"its header has fields crossgate does not accept: {', '.join(map(str, extra))}")
    return header


# Every token of one key has the same header: its checks run once per distinct header text.
@lru_cache(maxsize=64)
def _kid_of(segment: str) -> str:
    kid = _header(segment).get("kid")
    if not isinstance(kid, str) or not kid:
        raise SignatureError("the token names no key (kid)", reason="unknown_key")
    return kid


def _malformed(problem: str) -> SignatureError:
    return SignatureError(f"malformed token: {problem}", reason="malformed")

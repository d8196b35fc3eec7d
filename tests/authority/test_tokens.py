"""The token itself: JWS compact with EdDSA, and every way a forged or damaged token is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crossgate.authority import (
    Authority,
    CheckpointClaims,
    DecisionClaims,
    PolicyVersionClaims,
    ReviewerKind,
    SignatureError,
    StandingRuleClaims,
    TrustedKeys,
)
from crossgate.authority._jws import header_for
from crossgate.authority._jws import sign as jws_sign
from crossgate.authority.claims import RuleMatch, RuleScope
from crossgate.errors import InvalidDecisionError
from crossgate.fingerprint import canonical_json, fingerprint
from crossgate.model import DecisionKind, RememberMatch, RememberScope, VerdictKind

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HEAD = hashlib.sha256(b"head").hexdigest()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def segments(token: str) -> tuple[dict[str, object], dict[str, object], str]:
    header, payload, signature = token.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return (
        json.loads(base64.urlsafe_b64decode(pad(header))),
        json.loads(base64.urlsafe_b64decode(pad(payload))),
        signature,
    )


def approve_claims(request_id: str = "req_1") -> DecisionClaims:
    return DecisionClaims(
        request_id=request_id,
        tool="delete_ticket",
        fingerprint=fingerprint("delete_ticket", {"id": "t1"}),
        kind=DecisionKind.APPROVE,
        reviewer="ana",
        reviewer_kind=ReviewerKind.REVIEWER,
        decided_at=AT,
    )


def checkpoint() -> CheckpointClaims:
    return CheckpointClaims(seq=7, head_hash=HEAD, at=AT)


EVERY_KIND = [
    approve_claims(),
    StandingRuleClaims(
        rule_id="rule_1",
        verdict=VerdictKind.ALLOW,
        match=RuleMatch(tool="read_*", match=RememberMatch.TOOL),
        scope=RuleScope(scope=RememberScope.FOREVER),
        created_by="ops",
        created_at=AT,
    ),
    PolicyVersionClaims(version=3, digest=HEAD, created_by="ops", created_at=AT),
    checkpoint(),
]


def refusal(trusted: TrustedKeys, token: str, expected: type = DecisionClaims) -> SignatureError:
    with pytest.raises(SignatureError) as caught:
        trusted.verify(token, expected)
    return caught.value


# round trip --------------------------------------------------------------------------------------
@pytest.mark.parametrize("claims", EVERY_KIND, ids=lambda c: c.typ)
def test_every_kind_of_claims_round_trips(authority: Authority, trusted: TrustedKeys, claims: object) -> None:
    assert isinstance(claims, DecisionClaims | StandingRuleClaims | PolicyVersionClaims | CheckpointClaims)
    token = authority.sign(claims)
    assert trusted.verify(token, type(claims)) == claims
    assert trusted.verify(token) == claims


def test_the_token_is_jws_compact_eddsa_naming_the_key(authority: Authority) -> None:
    token = authority.sign(checkpoint())
    header, payload, signature = segments(token)
    assert header == {"alg": "EdDSA", "kid": authority.kid}
    assert payload["typ"] == "crossgate.audit_checkpoint.v1"
    assert len(base64.urlsafe_b64decode(signature + "==")) == 64
    # the payload is the canonical JSON of the claims, times in UTC
    assert token.split(".")[1] == b64(canonical_json(checkpoint().model_dump(mode="json")).encode())
    assert payload["at"] == "2026-11-30T12:00:00Z"


def test_times_sign_in_utc_whatever_offset_they_were_given_in(authority: Authority, trusted: TrustedKeys) -> None:
    from datetime import timedelta, timezone

    paris = CheckpointClaims(seq=7, head_hash=HEAD, at=AT.astimezone(timezone(timedelta(hours=1))))
    assert authority.sign(paris) == authority.sign(checkpoint())
    assert trusted.verify(authority.sign(paris), CheckpointClaims).at == AT


def test_the_kid_is_the_jwk_thumbprint_of_the_public_key(authority: Authority) -> None:
    # RFC 7638: sha256 over {"crv","kty","x"} in that order, no whitespace
    x = authority.public_key.pin.removeprefix("ed25519:")
    jwk = f'{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}'
    assert authority.kid == b64(hashlib.sha256(jwk.encode()).digest())


def test_the_authority_never_shows_its_private_key(authority: Authority) -> None:
    private = authority.private_pem().decode()
    assert "PRIVATE KEY" in private
    assert private not in repr(authority)
    assert repr(authority) == f"Authority(kid={authority.kid!r})"


# forged keys -------------------------------------------------------------------------------------
def test_a_token_signed_with_the_attackers_own_key_names_an_unknown_kid(
    trusted: TrustedKeys, attacker: Authority
) -> None:
    error = refusal(trusted, attacker.sign(approve_claims()))
    assert error.reason == "unknown_key"
    assert attacker.kid in str(error)


def test_a_token_signed_by_the_attacker_under_the_authoritys_kid_fails_the_signature(
    authority: Authority, trusted: TrustedKeys, attacker: Authority
) -> None:
    forged = jws_sign(attacker._key, header_for(authority.kid), approve_claims().payload())
    assert segments(forged)[0]["kid"] == authority.kid
    error = refusal(trusted, forged)
    assert error.reason == "bad_signature"


def test_claims_changed_after_signing_fail_the_signature(authority: Authority, trusted: TrustedKeys) -> None:
    header, _, signature = authority.sign(approve_claims("req_1")).split(".")
    other = b64(approve_claims("req_2").payload().encode())
    assert refusal(trusted, f"{header}.{other}.{signature}").reason == "bad_signature"


def test_the_signature_of_one_token_does_not_carry_over_to_another(authority: Authority, trusted: TrustedKeys) -> None:
    first = authority.sign(approve_claims("req_1")).split(".")
    second = authority.sign(approve_claims("req_2")).split(".")
    assert refusal(trusted, f"{first[0]}.{second[1]}.{first[2]}").reason == "bad_signature"


# algorithms --------------------------------------------------------------------------------------
def test_alg_none_is_refused_even_with_the_right_kid(authority: Authority, trusted: TrustedKeys) -> None:
    header = b64(json.dumps({"alg": "none", "kid": authority.kid}).encode())
    payload = b64(approve_claims().payload().encode())
    for token in (f"{header}.{payload}.", f"{header}.{payload}.{b64(b'x' * 64)}"):
        error = refusal(trusted, token)
        assert error.reason == "algorithm"
        assert "'none'" in str(error)


def test_hs256_keyed_with_the_public_key_is_refused(authority: Authority, trusted: TrustedKeys) -> None:
    # The classic confusion: an HMAC "signed" with the public key, which every agent has.
    header = b64(json.dumps({"alg": "HS256", "kid": authority.kid}).encode())
    signing_input = f"{header}.{b64(approve_claims().payload().encode())}"
    mac = hmac.new(authority.public_key.raw, signing_input.encode(), hashlib.sha256).digest()
    error = refusal(trusted, f"{signing_input}.{b64(mac)}")
    assert error.reason == "algorithm"
    assert "only EdDSA" in str(error)


@pytest.mark.parametrize("alg", ["ES256", "RS256", "Ed25519", "eddsa", None, 1])
def test_any_algorithm_but_eddsa_is_refused(authority: Authority, trusted: TrustedKeys, alg: object) -> None:
    header = b64(json.dumps({"alg": alg, "kid": authority.kid}).encode())
    assert refusal(trusted, f"{header}.{b64(b'{}')}.{b64(b'x' * 64)}").reason == "algorithm"


@pytest.mark.parametrize(
    "extra", [{"jwk": {"kty": "OKP"}}, {"jku": "http://127.0.0.1/k"}, {"x5u": "x"}, {"crit": ["exp"]}, {"typ": "JWT"}]
)
def test_a_header_that_names_its_own_key_or_extensions_is_refused(
    authority: Authority, trusted: TrustedKeys, extra: dict[str, object]
) -> None:
    header = b64(json.dumps({"alg": "EdDSA", "kid": authority.kid, **extra}).encode())
    payload = b64(approve_claims().payload().encode())
    signature = b64(authority._key.sign(f"{header}.{payload}".encode()))
    assert refusal(trusted, f"{header}.{payload}.{signature}").reason == "malformed"


# malformed ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "token",
    [
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "eyJ.!!.sig",
        "e30=.e30.AAAA",  # padding
        "x" * 70_000,
        b64(b"[1]") + ".e30." + b64(b"x" * 64),
        b64(b"not json") + ".e30." + b64(b"x" * 64),
    ],
)
def test_malformed_tokens_are_refused(trusted: TrustedKeys, token: str) -> None:
    assert refusal(trusted, token).reason == "malformed"


def test_a_token_without_a_kid_is_refused(trusted: TrustedKeys) -> None:
    header = b64(b'{"alg":"EdDSA"}')
    assert refusal(trusted, f"{header}.e30.{b64(b'x' * 64)}").reason == "unknown_key"


def test_a_signature_of_the_wrong_length_is_refused(authority: Authority, trusted: TrustedKeys) -> None:
    header, payload, _ = authority.sign(approve_claims()).split(".")
    assert refusal(trusted, f"{header}.{payload}.{b64(b'x' * 63)}").reason == "bad_signature"


def test_a_signature_with_changed_unused_trailing_bits_is_refused(authority: Authority, trusted: TrustedKeys) -> None:
    # 64 bytes are 86 base64url characters; the last one carries 4 unused bits. A lenient decoder reads
    # "...A" and "...B" as the same signature, so the changed token would still verify.
    header, payload, signature = authority.sign(approve_claims()).split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    index = alphabet.index(signature[-1])
    sibling = alphabet[index ^ 1]
    assert base64.urlsafe_b64decode(signature[:-1] + sibling + "==") == base64.urlsafe_b64decode(signature + "==")
    error = refusal(trusted, f"{header}.{payload}.{signature[:-1]}{sibling}")
    assert error.reason == "malformed"
    assert "canonical" in str(error)


@pytest.mark.parametrize(
    "payload",
    [
        '{"typ": "crossgate.audit_checkpoint.v1", "seq": 7}',  # not canonical, and incomplete
        '{"at":"2026-11-30T12:00:00+00:00","head_hash":"' + HEAD + '","seq":7,"typ":"crossgate.audit_checkpoint.v1"}',
        '{"at":"2026-11-30T12:00:00Z","extra":1,"head_hash":"'
        + HEAD
        + '","seq":7,"typ":"crossgate.audit_checkpoint.v1"}',
        '{"at":"2026-11-30T12:00:00Z","head_hash":"' + HEAD + '","seq":-1,"typ":"crossgate.audit_checkpoint.v1"}',
        '{"at":"2026-11-30T12:00:00","head_hash":"' + HEAD + '","seq":7,"typ":"crossgate.audit_checkpoint.v1"}',
        "[]",
    ],
    ids=["incomplete", "not-canonical-time", "extra-field", "negative-seq", "naive-time", "not-an-object"],
)
def test_a_validly_signed_payload_that_is_not_exactly_canonical_claims_is_refused(
    authority: Authority, trusted: TrustedKeys, payload: str
) -> None:
    token = jws_sign(authority._key, header_for(authority.kid), payload)
    assert refusal(trusted, token, CheckpointClaims).reason in ("malformed", "wrong_type")


# type confusion ----------------------------------------------------------------------------------
@pytest.mark.parametrize("claims", EVERY_KIND[1:], ids=lambda c: c.typ)
def test_a_token_of_another_kind_never_verifies_as_a_decision(
    authority: Authority, trusted: TrustedKeys, claims: object
) -> None:
    assert isinstance(claims, StandingRuleClaims | PolicyVersionClaims | CheckpointClaims)
    error = refusal(trusted, authority.sign(claims), DecisionClaims)
    assert error.reason == "wrong_type"
    assert f"is a {claims.typ}, not a crossgate.decision.v1" in str(error)


def test_a_checkpoint_token_presented_as_a_decision_is_refused_by_verify_decision(
    authority: Authority, trusted: TrustedKeys
) -> None:
    with pytest.raises(SignatureError) as caught:
        trusted.verify_decision(authority.sign(checkpoint()), request_id="req_1", fingerprint=HEAD)
    assert caught.value.reason == "wrong_type"


def test_a_payload_with_an_unknown_typ_is_refused(authority: Authority, trusted: TrustedKeys) -> None:
    token = jws_sign(authority._key, header_for(authority.kid), '{"typ":"crossgate.decision.v9"}')
    assert refusal(trusted, token).reason == "wrong_type"


def test_signature_error_is_an_invalid_decision_in_the_error_tree() -> None:
    assert issubclass(SignatureError, InvalidDecisionError)


# any change fails --------------------------------------------------------------------------------
_TOKEN_AUTHORITY = Authority.generate()
_TOKEN = _TOKEN_AUTHORITY.sign(approve_claims())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(min_value=0, max_value=len(_TOKEN) - 1), byte=st.integers(min_value=0, max_value=255))
def test_any_single_byte_change_of_a_token_fails_verification(index: int, byte: int) -> None:
    original = _TOKEN.encode("ascii")
    if original[index] == byte:
        byte = (byte + 1) % 256
    changed = original[:index] + bytes([byte]) + original[index + 1 :]
    token = changed.decode("latin-1")
    with pytest.raises(SignatureError):
        _TOKEN_AUTHORITY.trusted_keys().verify(token, DecisionClaims)


@pytest.mark.parametrize("claims", EVERY_KIND, ids=lambda c: c.typ)
def test_the_payload_is_exactly_the_projects_canonical_json(claims: object) -> None:
    assert isinstance(claims, DecisionClaims | StandingRuleClaims | PolicyVersionClaims | CheckpointClaims)
    odd = (
        claims.model_copy(update={"created_by": 'é "quoted" \\ \u2028 \x00 😀'})
        if hasattr(claims, "created_by")
        else claims
    )
    assert odd.payload() == canonical_json(odd.model_dump(mode="json"))

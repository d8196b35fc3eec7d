"""Pinning public keys, the key directory on disk, rotation, revocation and file permissions."""

from __future__ import annotations

import base64
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crossgate.authority import Authority, CheckpointClaims, Keyring, PublicKey, SignatureError, TrustedKeys
from crossgate.authority.keys import PUBKEY_ENV, PUBKEY_FILE_ENV
from crossgate.errors import ConfigurationError, ConflictError, NotFoundError

HEAD = "ab" * 32
AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def token(authority: Authority, seq: int = 1) -> str:
    return authority.sign(CheckpointClaims(seq=seq, head_hash=HEAD, at=AT))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# pin text ----------------------------------------------------------------------------------------
def test_every_pin_form_names_the_same_key(authority: Authority) -> None:
    raw = authority.public_key.raw
    forms = [
        authority.public_key.pin,
        authority.public_key.pem(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        f"  # the authority\n{authority.public_key.pin}\n",
    ]
    for form in forms:
        keys = TrustedKeys.parse(form)
        assert keys.kids == (authority.kid,), form
        keys.verify(token(authority), CheckpointClaims)


def test_pin_text_holds_several_keys_and_revoked_kids(authority: Authority, attacker: Authority) -> None:
    third = Authority.generate()
    keys = TrustedKeys.parse(f"{authority.public_key.pin}, {third.public_key.pem()}\nrevoked:{third.kid}")
    assert set(keys.kids) == {authority.kid, third.kid}
    keys.verify(token(authority), CheckpointClaims)
    with pytest.raises(SignatureError) as caught:
        keys.verify(token(third), CheckpointClaims)
    assert caught.value.reason == "revoked_key"
    with pytest.raises(SignatureError) as caught:
        keys.verify(token(attacker), CheckpointClaims)
    assert caught.value.reason == "unknown_key"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no authority public key"),
        ("# only a comment", "no authority public key"),
        ("ed25519:short", "not an Ed25519 public key"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", "not an Ed25519 public key"),
        ("revoked:abc", "no authority public key"),
    ],
)
def test_bad_pin_text_is_one_clear_configuration_error(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        TrustedKeys.parse(text)


def test_a_private_key_given_as_a_pin_is_refused_without_using_it(authority: Authority) -> None:
    with pytest.raises(ConfigurationError, match="pin only the public key"):
        TrustedKeys.parse(authority.private_pem().decode())


def test_a_pem_key_of_another_algorithm_is_refused() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(ConfigurationError, match="not an Ed25519 key"):
        PublicKey.parse(pem.decode())


# the environment ---------------------------------------------------------------------------------
def test_keys_from_the_environment_value_or_file(authority: Authority, tmp_path: Path) -> None:
    assert TrustedKeys.from_env({}) is None
    from_value = TrustedKeys.from_env({PUBKEY_ENV: authority.public_key.pin})
    assert from_value is not None and from_value.kids == (authority.kid,)
    pin_file = tmp_path / "authority.pub"
    pin_file.write_text(authority.public_key.pem())
    from_file = TrustedKeys.from_env({PUBKEY_FILE_ENV: str(pin_file)})
    assert from_file is not None and from_file.kids == (authority.kid,)


def test_both_environment_variables_at_once_are_refused(authority: Authority, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        TrustedKeys.from_env({PUBKEY_ENV: authority.public_key.pin, PUBKEY_FILE_ENV: str(tmp_path / "x")})


def test_a_missing_pin_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read the authority public key file"):
        TrustedKeys.from_env({PUBKEY_FILE_ENV: str(tmp_path / "missing.pub")})


# the key directory -------------------------------------------------------------------------------
def test_init_writes_an_owner_only_private_key_and_a_public_keyring(tmp_path: Path) -> None:
    directory = tmp_path / "authority"
    keyring = Keyring.init(directory)
    private = keyring.private_path(keyring.current)
    assert mode(directory) == 0o700
    assert mode(private) == 0o600
    assert mode(directory / "keyring.json") == 0o644
    assert sorted(p.name for p in directory.iterdir()) == sorted([private.name, "keyring.json"])
    document = json.loads((directory / "keyring.json").read_text())
    assert document["format"] == "crossgate-keyring/1"
    assert document["current"] == keyring.current
    assert "PRIVATE" not in (directory / "keyring.json").read_text()
    authority = Authority.load(directory)
    assert authority.kid == keyring.current == Authority.load(private).kid
    TrustedKeys.from_file(directory / "keyring.json").verify(token(authority), CheckpointClaims)


def test_the_private_key_is_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        keyring = Keyring.init(tmp_path / "k")
    finally:
        os.umask(previous)
    assert mode(keyring.private_path(keyring.current)) == 0o600


def test_init_refuses_to_replace_a_keyring_without_force(tmp_path: Path) -> None:
    first = Keyring.init(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConflictError, match="--force"):
        Keyring.init(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    second = Keyring.init(tmp_path, force=True)
    assert second.current != first.current
    assert not first.private_path(first.current).exists()
    assert Authority.load(tmp_path).kid == second.current


@pytest.mark.parametrize("loose", [0o640, 0o604, 0o644, 0o660, 0o602])
def test_a_private_key_other_users_can_read_or_write_is_refused(tmp_path: Path, loose: int) -> None:
    keyring = Keyring.init(tmp_path)
    private = keyring.private_path(keyring.current)
    private.chmod(loose)
    for path in (private, tmp_path):
        with pytest.raises(ConfigurationError) as caught:
            Authority.load(path)
        message = str(caught.value)
        assert "\n" not in message
        assert f"mode {loose:04o}" in message and f"chmod 600 {private}" in message


def test_a_file_that_is_not_an_ed25519_private_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    path.chmod(0o600)
    with pytest.raises(ConfigurationError, match="not an unencrypted PEM private key"):
        Authority.load(path)


def test_a_keyring_whose_entry_holds_another_key_than_its_kid_is_refused(tmp_path: Path, attacker: Authority) -> None:
    keyring = Keyring.init(tmp_path)
    document = json.loads((tmp_path / "keyring.json").read_text())
    document["keys"][0]["public_key"] = attacker.public_key.pin  # the kid still names the real key
    with pytest.raises(ConfigurationError, match=f"holds a key whose kid is {attacker.kid}"):
        TrustedKeys.parse(json.dumps(document))
    assert keyring.current == document["current"]


def test_a_broken_keyring_file_is_one_configuration_error(tmp_path: Path) -> None:
    Keyring.init(tmp_path)
    (tmp_path / "keyring.json").write_text('{"format": "crossgate-keyring/1", "current": "x", "keys": []}')
    with pytest.raises(ConfigurationError, match="not a crossgate keyring"):
        Keyring.open(tmp_path)
    with pytest.raises(ConfigurationError, match="no keyring"):
        Keyring.open(tmp_path / "elsewhere")


# rotation and revocation -------------------------------------------------------------------------
def test_after_rotation_old_tokens_verify_and_new_ones_use_the_new_kid(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path)
    old = Authority.load(tmp_path)
    old_token = token(old)
    new_key = keyring.rotate()
    assert keyring.current == new_key.kid != old.kid
    assert not keyring.private_path(old.kid).exists()  # the old private key is retired
    new = Authority.load(tmp_path)
    assert new.kid == new_key.kid
    trusted = Keyring.open(tmp_path).trusted_keys()
    assert set(trusted.kids) == {old.kid, new.kid}
    trusted.verify(old_token, CheckpointClaims)
    new_token = token(new, seq=2)
    assert json.loads(base64.urlsafe_b64decode(new_token.split(".")[0] + "=="))["kid"] == new.kid
    trusted.verify(new_token, CheckpointClaims)
    # an agent still pinning only the old key refuses what the new key signs: it fails closed
    with pytest.raises(SignatureError) as caught:
        old.trusted_keys().verify(new_token, CheckpointClaims)
    assert caught.value.reason == "unknown_key"


def test_a_revoked_key_refuses_even_what_it_signed_before(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path)
    old = Authority.load(tmp_path)
    old_token = token(old)
    keyring.rotate()
    keyring.revoke(old.kid)
    trusted = TrustedKeys.parse(Keyring.open(tmp_path).pin_text())
    with pytest.raises(SignatureError) as caught:
        trusted.verify(old_token, CheckpointClaims)
    assert caught.value.reason == "revoked_key"
    assert f"revoked:{old.kid}" in keyring.pin_text()
    assert old.public_key.pin not in keyring.pin_text()
    trusted.verify(token(Authority.load(tmp_path)), CheckpointClaims)


def test_revocation_refuses_the_current_key_an_unknown_kid_and_a_second_revocation(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path)
    first = keyring.current
    with pytest.raises(ConflictError, match="rotate first"):
        keyring.revoke(first)
    with pytest.raises(NotFoundError):
        keyring.revoke("no-such-kid")
    keyring.rotate()
    keyring.revoke(first)
    with pytest.raises(ConflictError, match="already revoked"):
        keyring.revoke(first)


def test_a_keyring_whose_current_key_is_revoked_is_refused(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path)
    document = json.loads((tmp_path / "keyring.json").read_text())
    document["revoked"] = [{"kid": keyring.current, "revoked_at": "2026-11-30T12:00:00Z"}]
    (tmp_path / "keyring.json").write_text(json.dumps(document))
    with pytest.raises(ConfigurationError, match="is revoked"):
        Keyring.open(tmp_path)


def test_a_key_directory_the_os_refuses_is_one_configuration_error(tmp_path: Path) -> None:
    for directory in (tmp_path / ("x" * 300), Path("/proc/no-keys-here")):
        with pytest.raises(ConfigurationError) as caught:
            Keyring.init(directory)
        assert "\n" not in str(caught.value) and "cannot write the key directory" in str(caught.value)

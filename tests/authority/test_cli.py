"""``crossgate keys``: through the CLI's entry point in-process, and once as the installed script."""

from __future__ import annotations

import json
import stat
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from crossgate.authority import Authority, CheckpointClaims, SignatureError, TrustedKeys
from crossgate.authority.keyring import KEYRING_DIR_ENV
from crossgate.cli import app
from tests.cli.conftest import CROSSGATE, subprocess_env

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def keys(*args: str, **env: str | None) -> Result:
    return CliRunner().invoke(app, ["keys", *args], env={KEYRING_DIR_ENV: None, **env})


def ok(*args: str, **env: str | None) -> Result:
    result = keys(*args, **env)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result


def as_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json").stdout)


def signed_by(directory: Path) -> str:
    return Authority.load(directory).sign(CheckpointClaims(seq=1, head_hash="cd" * 32, at=AT))


def test_init_prints_the_line_to_pin_and_keeps_the_private_key_owner_only(tmp_path: Path) -> None:
    result = ok("init", "--dir", str(tmp_path / "k"))
    pin = result.stdout.strip()
    assert pin.startswith("ed25519:") and "\n" not in pin
    assert "0600" in result.stderr and "CROSSGATE_AUTHORITY_PUBKEY=" in result.stderr
    private = next((tmp_path / "k").glob("*.pem"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    # the printed line is what an agent pins, and it verifies what the key on disk signs
    TrustedKeys.parse(pin).verify(signed_by(tmp_path / "k"), CheckpointClaims)
    assert pin not in private.read_text() and "PRIVATE KEY" not in result.stdout + result.stderr


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    first = ok("init", "--dir", str(tmp_path)).stdout
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    again = keys("init", "--dir", str(tmp_path))
    assert again.exit_code == 4
    assert again.stderr.count("\n") == 1 and "--force" in again.stderr and "Traceback" not in again.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    replaced = ok("init", "--dir", str(tmp_path), "--force").stdout
    assert replaced != first
    assert len(list(tmp_path.glob("*.pem"))) == 1


def test_the_directory_comes_from_the_environment(tmp_path: Path) -> None:
    pin = ok("init", **{KEYRING_DIR_ENV: str(tmp_path)}).stdout.strip()
    assert pin in ok("show", **{KEYRING_DIR_ENV: str(tmp_path)}).stdout


def test_show_prints_pin_text_an_agent_can_load(tmp_path: Path) -> None:
    pin = ok("init", "--dir", str(tmp_path)).stdout.strip()
    shown = ok("show", "--dir", str(tmp_path))
    assert shown.stderr == ""
    trusted = TrustedKeys.parse(shown.stdout)
    kid = as_json("show", "--dir", str(tmp_path))["current"]
    assert trusted.kids == (kid,) and pin in shown.stdout and f"kid {kid} (current" in shown.stdout
    trusted.verify(signed_by(tmp_path), CheckpointClaims)


def test_show_warns_when_the_private_key_is_readable_by_others(tmp_path: Path) -> None:
    ok("init", "--dir", str(tmp_path))
    next(tmp_path.glob("*.pem")).chmod(0o644)
    shown = ok("show", "--dir", str(tmp_path))
    assert shown.stderr.startswith("warning: refusing the authority private key") and "chmod 600" in shown.stderr


def test_rotate_keeps_the_old_key_trusted_and_signs_with_the_new_one(tmp_path: Path) -> None:
    ok("init", "--dir", str(tmp_path))
    old_token = signed_by(tmp_path)
    rotated = as_json("rotate", "--dir", str(tmp_path))
    assert rotated["current"] and rotated["previous"] != rotated["kid"]
    listed = as_json("show", "--dir", str(tmp_path))
    assert [k["kid"] for k in listed["keys"]] == [rotated["previous"], rotated["kid"]]
    assert listed["current"] == rotated["kid"]
    trusted = TrustedKeys.parse(ok("show", "--dir", str(tmp_path)).stdout)
    assert trusted.verify(old_token, CheckpointClaims).seq == 1
    new_token = signed_by(tmp_path)
    assert Authority.load(tmp_path).kid == rotated["kid"]
    trusted.verify(new_token, CheckpointClaims)


def test_revoke_refuses_what_the_key_signed(tmp_path: Path) -> None:
    ok("init", "--dir", str(tmp_path))
    old_token = signed_by(tmp_path)
    old_kid = as_json("show", "--dir", str(tmp_path))["current"]
    current_refused = keys("revoke", old_kid, "--dir", str(tmp_path))
    assert current_refused.exit_code == 4 and "rotate first" in current_refused.stderr
    ok("rotate", "--dir", str(tmp_path))
    assert ok("revoke", old_kid, "--dir", str(tmp_path)).stdout.strip() == f"revoked key {old_kid}"
    shown = ok("show", "--dir", str(tmp_path)).stdout
    assert f"revoked:{old_kid}" in shown
    with pytest.raises(SignatureError) as caught:
        TrustedKeys.parse(shown).verify(old_token, CheckpointClaims)
    assert caught.value.reason == "revoked_key"
    again = keys("revoke", old_kid, "--dir", str(tmp_path))
    assert again.exit_code == 4 and "already revoked" in again.stderr


def test_bad_input_is_one_line_and_an_exit_code(tmp_path: Path) -> None:
    ok("init", "--dir", str(tmp_path))
    before = (tmp_path / "keyring.json").read_bytes()
    unknown = keys("revoke", "no-such-kid", "--dir", str(tmp_path))
    assert unknown.exit_code == 3 and unknown.stderr.count("\n") == 1
    missing = keys("show", "--dir", str(tmp_path / "none"))
    assert missing.exit_code == 1 and "crossgate keys init" in missing.stderr and missing.stderr.count("\n") == 1
    (tmp_path / "keyring.json").write_text("{not json")
    broken = keys("rotate", "--dir", str(tmp_path))
    assert broken.exit_code == 1 and "not a crossgate keyring" in broken.stderr and "Traceback" not in broken.stderr
    (tmp_path / "keyring.json").write_bytes(before)
    assert keys("revoke", "--dir", str(tmp_path)).exit_code == 2


@pytest.mark.slow
def test_the_installed_script_makes_a_key_an_agent_pins_from_a_file(tmp_path: Path) -> None:
    directory = tmp_path / "authority"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CROSSGATE), "keys", *args, "--dir", str(directory)],
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    init = run("init")
    assert init.returncode == 0, init.stderr
    pin_file = tmp_path / "authority.pub"
    pin_file.write_text(run("show").stdout)
    trusted = TrustedKeys.from_env({"CROSSGATE_AUTHORITY_PUBKEY_FILE": str(pin_file)})
    assert trusted is not None
    assert trusted.verify(signed_by(directory), CheckpointClaims).seq == 1
    again = run("init")
    assert again.returncode == 4 and again.stderr.startswith("crossgate: error: ")

"""The first run of ``crossgate serve`` on a fresh data directory, as a new user runs it, and the second one."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from crossgate import open_store
from crossgate.authority import Keyring, TrustedKeys
from crossgate.policy.versions import load_current_policy
from crossgate.server.setup import SetupReport, write_default_pin
from tests.server.live_serve import Home, serve

pytestmark = pytest.mark.slow
POLICY_FILE = str(Path(__file__).resolve().parents[2] / "examples" / "policy.yaml")
CALL = {"framework": "openai-agents", "tool": "delete_ticket", "args": {"id": "T-1"}, "run": "r1", "call_id": "c1"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _kept_files(home: Home) -> dict[str, bytes]:
    """Every file the setup wrote, but the database (which a running server writes to)."""
    found = {}
    for path in sorted([*home.data.rglob("*"), *home.config.rglob("*")]):
        if path.is_file() and not path.name.startswith("crossgate.db"):
            found[str(path.relative_to(home.root))] = path.read_bytes()
    return found


def _printed_block(printed: list[str]) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in printed if line.startswith("CROSSGATE_")]
    return {pair[0]: pair[1] for pair in pairs}


def test_the_first_run_sets_up_keys_credentials_pin_and_policy_and_the_second_changes_nothing(tmp_path: Path) -> None:
    home = Home(tmp_path)
    first = serve(home, "--policy", POLICY_FILE)
    try:
        printed = "\n".join(first.printed)
        block = _printed_block(first.printed)
        assert set(block) == {"CROSSGATE_SERVER", "CROSSGATE_AGENT_TOKEN", "CROSSGATE_AUTHORITY_PUBKEY"}
        assert block["CROSSGATE_SERVER"] == first.base
        admin_token = next(line for line in first.printed if "admin's token" in line).rsplit(" ", 1)[1]

        # keys owner-only, the outputs owner-only and what was printed
        keys = home.data / "authority"
        [private] = list(keys.glob("*.pem"))
        assert _mode(private) == 0o600 and _mode(keys) == 0o700 and _mode(home.data) == 0o700
        assert _mode(home.data / "agent.env") == 0o600 and _mode(home.data / "admin.token") == 0o600
        env_text = (home.data / "agent.env").read_text()
        assert all(f"{name}={value}\n" in env_text for name, value in block.items())
        assert (home.data / "admin.token").read_text().strip() == admin_token

        # the admin credential works, and may manage credentials
        me = httpx.get(f"{first.base}/api/me", headers={"Authorization": f"Bearer {admin_token}"})
        assert me.json()["name"] == "admin"
        listed = httpx.get(f"{first.base}/api/admin/agents", headers={"Authorization": f"Bearer {admin_token}"})
        assert [a["name"] for a in listed.json()["items"]] == ["agent"]

        # the agent token submits over the agent API and cannot decide
        agent = {"Authorization": f"Bearer {block['CROSSGATE_AGENT_TOKEN']}"}
        submitted = httpx.post(
            f"{first.base}/api/agent/v1/requests", json={"call": CALL}, headers={**agent, "Idempotency-Key": "k1"}
        )
        assert submitted.status_code == 201, submitted.text
        rid = submitted.json()["request"]["id"]
        assert submitted.json()["request"]["reason"].startswith("Deleting a ticket")  # policy version 1 asks
        refused = httpx.post(f"{first.base}/api/requests/{rid}/decision", json={"kind": "approve"}, headers=agent)
        assert refused.status_code == 403
        admin = {"Authorization": f"Bearer {admin_token}"}
        approved = httpx.post(f"{first.base}/api/requests/{rid}/decision", json={"kind": "approve"}, headers=admin)
        assert approved.status_code == 200

        # the printed pin verifies the decision and the policy; the default pin file holds the same key
        pin = TrustedKeys.parse(block["CROSSGATE_AUTHORITY_PUBKEY"])
        store = open_store(str(home.data / "crossgate.db"))
        request = store.get_request(rid)
        assert request is not None and request.signatures
        pin.verify_decision(request.signatures[0], request_id=rid, fingerprint=request.fingerprint)
        verified = load_current_policy(store, pin)
        assert verified is not None and verified.version.version == 1 and verified.version.source == POLICY_FILE
        assert [v.version for v in store.list_policy_versions()] == [1]
        default_pin = TrustedKeys.parse((home.config / "authority.pub").read_text())
        assert default_pin.kids == pin.kids
        credentials_before = store.list_credentials(include_revoked=True)  # type: ignore[attr-defined]
        store.close()
        assert "first run" in printed
    finally:
        first.stop()
    files = _kept_files(home)

    second = serve(home, "--policy", POLICY_FILE)
    out, err = second.stop()
    again = "\n".join(second.printed) + out
    assert "first run" not in again and "CROSSGATE_AGENT_TOKEN" not in again and "token" not in again
    assert "note:" not in err
    assert _kept_files(home) == files, "no new keys, tokens, pin or output"
    store = open_store(str(home.data / "crossgate.db"))
    assert store.list_credentials(include_revoked=True) == credentials_before  # type: ignore[attr-defined]
    assert [v.version for v in store.list_policy_versions()] == [1]
    store.close()


def test_a_pin_file_with_another_key_is_left_alone_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    other = Keyring.init(tmp_path / "other")
    ours = Keyring.init(tmp_path / "ours")
    pin = tmp_path / "config" / "crossgate" / "authority.pub"
    pin.parent.mkdir(parents=True)
    pin.write_text(other.pin_text())
    report = SetupReport()
    write_default_pin(ours, report)
    assert pin.read_text() == other.pin_text()
    [note] = report.notes
    assert str(pin) in note and ours.current in note and "\n" not in note
    pin.write_text("not a pin at all")
    report = SetupReport()
    write_default_pin(ours, report)
    assert pin.read_text() == "not a pin at all" and len(report.notes) == 1
    pin.write_text(ours.pin_text())
    report = SetupReport()
    write_default_pin(ours, report)
    assert report.notes == [] and report.lines == []


def test_a_named_key_directory_without_a_keyring_is_refused_in_one_line(tmp_path: Path) -> None:
    home = Home(tmp_path)
    (tmp_path / "home").mkdir()
    refused = home.run("serve", "--authority-dir", str(tmp_path / "typo"), "--port", "0")
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1 and "typo" in refused.stderr
    assert not (tmp_path / "typo").exists() and not home.data.exists()

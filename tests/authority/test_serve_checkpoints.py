"""``crossgate serve`` with the authority's key: it evaluates the stored signed policy, signs a checkpoint after each
decision, and signs the log's head on its timer; without the key it says that it signs nothing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.authority import Keyring, TrustedKeys
from crossgate.checkpoints import verify_signed_log
from crossgate.policy.versions import apply_policy

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from crossgate.cli import main; sys.argv[0] = 'crossgate'; main()"]
POLICY = Policy(rules=(PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*", reason="Final."),))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    db: str, keys: Path | None, port: int, config_home: Path | None = None, data_home: Path | None = None
) -> subprocess.Popen[str]:
    """``crossgate serve`` with the keyring in ``keys``; None names none (the default folder under ``config_home``)."""
    env = {**os.environ, "CROSSGATE_TOKENS": "ops:ops-token-123"}
    unset = ("CROSSGATE_POLICY", "CROSSGATE_AUTHORITY_PUBKEY", "CROSSGATE_AUTHORITY_PUBKEY_FILE")
    unset += ("CROSSGATE_AUTHORITY_DIR",)
    for name in unset:
        env.pop(name, None)
    if keys is not None:
        env["CROSSGATE_AUTHORITY_DIR"] = str(keys)
    if config_home is not None:
        env["XDG_CONFIG_HOME"] = str(config_home)
    if data_home is not None:
        env["XDG_DATA_HOME"] = str(data_home)
    args = [*CLI, "--db", db, "serve", "--port", str(port), "--checkpoint-every", "1", "--log-level", "warning"]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until_up(process: subprocess.Popen[str], base: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.2)


def test_serve_signs_each_decision_and_the_head_on_its_timer(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path / "authority")
    db = str(tmp_path / "q.db")
    operator = ReviewQueue(open_store(db))
    apply_policy(operator.store, keyring.authority(), POLICY, created_by="ops")
    agent = ReviewQueue(open_store(db), trusted=TrustedKeys.parse(keyring.pin_text()))
    port = free_port()
    process = serve(db, tmp_path / "authority", port)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(process, base)
        request = agent.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "T-1"})).request
        assert request is not None
        headers = {"Authorization": "Bearer ops-token-123"}
        shown = httpx.get(f"{base}/api/requests/{request.id}", headers=headers).json()
        assert shown["reason"] == "Final."  # the agent evaluated the stored version
        decided = httpx.post(f"{base}/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=headers)
        assert decided.status_code == 200  # the server checked it against the stored version, with its keyring
        agent.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "T-2"}))  # the head moves on
        head = agent.store.audit_head()[0]
        deadline = time.monotonic() + 20
        while (latest := agent.store.latest_checkpoint()) is None or latest.seq < head:
            assert time.monotonic() < deadline, "the server's timer did not sign the head"
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert f"signing audit checkpoints with key {keyring.current}, every 1 s" in out, out + err
    kinds = {e.seq: e.kind for e in agent.events()}
    checkpoints = agent.store.list_checkpoints()
    assert [kinds[c.seq] for c in checkpoints if c.authored] == ["policy_applied", "decided"]
    assert any(not c.authored and c.seq == head for c in checkpoints)
    assert verify_signed_log(agent.store, keyring.trusted_keys()).ok
    agent.close()
    operator.close()


def test_serve_without_a_key_makes_one_in_its_data_directory_and_signs(tmp_path: Path) -> None:
    port = free_port()
    # no keyring named and none in the default folder: the first run makes one in the data directory
    process = serve(str(tmp_path / "q.db"), None, port, config_home=tmp_path / "config", data_home=tmp_path / "data")
    try:
        wait_until_up(process, f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    keyring = Keyring.open(tmp_path / "data" / "crossgate" / "authority")
    assert f"signing audit checkpoints with key {keyring.current}" in out
    assert "no authority key here" not in err

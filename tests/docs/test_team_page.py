"""docs/team.md, run as written: its shell blocks in order, in one bash, in a fresh HOME."""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.docs.snippets import offline_env, snippets

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "team.md"

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fresh_home_env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in offline_env().items() if not k.startswith(("CROSSGATE_", "XDG_"))}
    env.update(HOME=str(home), CROSSGATE_PORT=str(port), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    return env


def test_the_team_page_runs_as_written_in_a_fresh_home(tmp_path: Path) -> None:
    blocks = [b for b in snippets(PAGE, "bash") if b.skip_reason is None]
    assert len(blocks) >= 5, "the page's steps are shell blocks"
    script = "set -euo pipefail\n" + "\n".join(b.code for b in blocks)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    port = free_port()
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=fresh_home_env(home, port), capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = done.stdout
    assert out.count("deleted t3") == 1 and "Deleted t3." in out  # parked, approved by ann, resumed: ran once
    assert "first run: made the authority key" in out and "CROSSGATE_AGENT_TOKEN=" in out

    data = home / ".local" / "share" / "crossgate"
    for private in (data / "agent.env", data / "admin.token", home / ".config" / "crossgate" / "config.toml"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    assert "ed25519:" in (home / ".config" / "crossgate" / "authority.pub").read_text()
    ann = (work / "ann.token").read_text().strip()
    with sqlite3.connect(data / "crossgate.db") as db:
        stored = b"".join(bytes(str(row), "utf-8") for row in db.execute("SELECT * FROM credentials"))
        decided = db.execute("SELECT status FROM requests").fetchall()
    assert ann.encode() not in stored  # only its hash is kept
    assert decided == [("applied",)]


def test_the_agent_token_of_the_team_page_cannot_decide(tmp_path: Path) -> None:
    """The block the first run prints is all an agent holds, and it submits but never decides."""
    home, port = tmp_path / "home", free_port()
    home.mkdir()
    env = fresh_home_env(home, port)
    (tmp_path / "policy.yaml").write_text(PAGE.read_text().split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0])
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "crossgate"), "serve", "--policy", "policy.yaml", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{base}/api/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            subprocess.run(["sleep", "0.1"], check=True)
        block = dict(
            line.split("=", 1)
            for line in (home / ".local/share/crossgate/agent.env").read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        agent = {"Authorization": f"Bearer {block['CROSSGATE_AGENT_TOKEN']}"}
        call = {"framework": "langgraph", "tool": "delete_ticket", "args": {"id": "t1"}, "run": "r1"}
        keyed = {**agent, "Idempotency-Key": "k1"}
        submitted = httpx.post(f"{base}/api/agent/v1/requests", json={"call": call}, headers=keyed)
        assert submitted.status_code in (200, 201), submitted.text
        request = submitted.json()["request"]["id"]
        refused = httpx.post(f"{base}/api/requests/{request}/decision", json={"kind": "approve"}, headers=agent)
        assert refused.status_code in (401, 403), refused.text
        assert httpx.get(f"{base}/api/requests/{request}", headers=agent).status_code in (401, 403)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert os.path.exists(home / ".config" / "crossgate" / "authority.pub")

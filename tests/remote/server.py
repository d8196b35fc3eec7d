"""``crossgate serve`` as a subprocess on 127.0.0.1, with reviewers and agent credentials, for agents over HTTP.

The server process is the only one here that opens the store: an agent gets only ``url`` and an agent
token. ``kill()`` ends it with SIGKILL (a crash), ``start()`` brings it back on the same port and store.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from crossgate import Policy

REVIEWERS = {"ann": "ann-reviewer-token-01", "bob": "bob-reviewer-token-02"}
AGENTS = {"ticket-agent": "ticket-agent-token-0001", "other-agent": "other-agent-token-0002"}
AGENT_TOKEN = AGENTS["ticket-agent"]
OTHER_TOKEN = AGENTS["other-agent"]
ROOT = Path(__file__).resolve().parents[2]
SERVE = "from crossgate.cli import main; main()"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_tokens(path: Path) -> Path:
    lines = []
    for name, token in REVIEWERS.items():
        lines += ["[[reviewers]]", f'name = "{name}"', f'token = "{token}"', ""]
    for name, token in AGENTS.items():
        lines += ["[[agents]]", f'name = "{name}"', f'token = "{token}"', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


class LiveServer:
    """One ``crossgate serve`` over ``db_url`` judging by ``policy``; a context manager that stops it."""

    def __init__(self, workdir: Path, db_url: str, policy: Policy) -> None:
        self.workdir = workdir
        self.db_url = db_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tokens = write_tokens(workdir / "server-tokens.toml")
        self.policy_file = workdir / "server-policy.json"
        self.policy_file.write_text(policy.model_dump_json(), encoding="utf-8")
        self.log = workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        return [
            sys.executable, "-c", SERVE, "serve", "--db", self.db_url, "--policy", str(self.policy_file),
            "--tokens", str(self.tokens), "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip

    def start(self, timeout: float = 30.0) -> LiveServer:
        env = {k: v for k, v in os.environ.items() if k not in ("CROSSGATE_TOKENS", "CROSSGATE_AGENT_TOKEN")}
        # The server is another host: its first run pins its key in a config directory of its own, not in
        # the one this test's gates read (where a found pin would make them verify the test's unsigned decisions).
        env["XDG_CONFIG_HOME"] = str(self.workdir / "server-config")
        env["XDG_DATA_HOME"] = str(self.workdir / "server-data")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=log, env=env, cwd=self.workdir)
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {REVIEWERS['ann']}"}
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"crossgate serve exited: {self.log.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(f"{self.url}/api/health", headers=headers, timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"crossgate serve did not answer in {timeout} s: {self.log.read_text(errors='replace')}")

    def set_policy(self, policy: Policy) -> None:
        """Serve ``policy`` from now on (the server reads its policy file at start: restart it)."""
        self.policy_file.write_text(policy.model_dump_json(), encoding="utf-8")
        self.stop()
        self.start()

    def kill(self) -> None:
        """End the server at once, as a crash would (SIGKILL)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

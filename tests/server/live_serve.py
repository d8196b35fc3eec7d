"""A real ``crossgate serve`` process in a home of its own, for the first-run and credential tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.server.demo_loader import ROOT

CLI = [sys.executable, "-m", "crossgate.cli"]
LEAKS = (
    "CROSSGATE_AUTHORITY_DIR",
    "CROSSGATE_TOKENS",
    "CROSSGATE_DB",
    "CROSSGATE_POLICY",
    "CROSSGATE_AUTHORITY_PUBKEY",
    "CROSSGATE_AUTHORITY_PUBKEY_FILE",
    "CROSSGATE_DATA_DIR",
    "CROSSGATE_SERVER",
    "CROSSGATE_TOKEN",
)

HOME_VARS = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Home:
    """A fresh HOME with its own XDG data and config directories."""

    root: Path
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data" / "crossgate"

    @property
    def config(self) -> Path:
        return self.root / "config" / "crossgate"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in LEAKS}
        env.update(HOME=str(self.root / "home"), XDG_DATA_HOME=str(self.root / "data"))
        env.update(XDG_CONFIG_HOME=str(self.root / "config"), PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        env.update(self.extra)
        env.update(extra)
        return env

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """``crossgate ARGS`` to its end, in a process of its own."""
        return subprocess.run(
            [*CLI, *args], cwd=self.root, env=self.env(**extra), capture_output=True, text=True, timeout=60
        )

    def cli(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """``crossgate ARGS`` in this process (a process start costs seconds on a busy machine), in this home."""
        from typer.testing import CliRunner

        from crossgate.cli import app

        env: dict[str, str | None] = dict.fromkeys(LEAKS)
        env.update({k: v for k, v in self.env(**extra).items() if k in (*LEAKS, *HOME_VARS)})
        result = CliRunner().invoke(app, list(args), env=env)
        return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


@dataclass
class Served:
    """A running server: its address and everything it printed up to its review page line."""

    process: subprocess.Popen[str]
    base: str
    printed: list[str]

    def stop(self) -> tuple[str, str]:
        """SIGINT, then what else it printed (stdout, stderr)."""
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=30)
        return out, err


def serve(home: Home, *args: str) -> Served:
    """``crossgate serve ARGS`` on a free port, up and answering."""
    (home.root / "home").mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [*CLI, "serve", "--port", str(port), "--log-level", "warning", *args]
    process = subprocess.Popen(
        command, cwd=home.root, env=home.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    printed: list[str] = []
    while not printed or "review page" not in printed[-1]:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"serve ended: {''.join(printed)} {process.stderr.read() if process.stderr else ''}")
        printed.append(line.rstrip("\n"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return Served(process, base, printed)
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.1)


def repo_file(*parts: str) -> str:
    """A file of the repository, by its path."""
    return str(Path(ROOT, *parts))

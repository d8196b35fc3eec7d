"""The demo's TypeScript agent: the Vercel AI SDK behind ``@crossgate/ai-sdk``, on the SDK's mock model, run with node.

It is its own ``node`` process (``adapters/typescript/packages/examples/dist/cli.js``) that reaches the queue
only through the server's agent API, with an agent token and the authority's public key pinned; it never
opens the store. Its ticket lives in a JSON file of its own (Node 20 has no SQLite), which the demo's report
reads beside the ticket table. Without ``node``, or before the npm workspace is installed and built
(``make install`` does both when node is there), ``unavailable()`` says why and the demo runs without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossgate.runs import Finished, Parked

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = ROOT / "adapters" / "typescript"
CLI = WORKSPACE / "packages" / "examples" / "dist" / "cli.js"
MIN_NODE = (20, 19)
SDK = "ai-sdk"
TIMEOUT_SECONDS = 120.0


def unavailable() -> str | None:
    """Why the TypeScript agent cannot run here (one line), or None when it can."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "node does not run (node --version failed)"
    found = tuple(int(part) for part in version.strip().lstrip("v").split(".")[:2] if part.isdigit())
    if found < MIN_NODE:
        return f"node {version.strip()} is older than {'.'.join(map(str, MIN_NODE))}"
    if not (WORKSPACE / "node_modules" / ".package-lock.json").is_file():
        return "the npm workspace is not installed (make install, or: cd adapters/typescript && npm ci)"
    if not CLI.is_file():
        return "the npm workspace is not built (make install, or in adapters/typescript: npx tsc -b packages/examples)"
    return None


class JsonTickets:
    """The TypeScript agent's tickets: ``{"tickets": [...], "deletes": [...]}``, as ``@crossgate/testing`` writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def seed(self, ids: list[str]) -> None:
        self.path.write_text(json.dumps({"tickets": sorted(ids), "deletes": []}), encoding="utf-8")

    def _read(self) -> dict[str, list[str]]:
        data: dict[str, list[str]] = json.loads(self.path.read_text(encoding="utf-8"))
        return data

    def ids(self) -> list[str]:
        return self._read()["tickets"]

    def delete_runs(self) -> list[str]:
        return self._read()["deletes"]


@dataclass
class TypeScriptAgent:
    """One ticket agent of the demo, run as ``node cli.js ai-sdk start|resume`` (the demo's ``DemoAgent`` shape)."""

    url: str
    token: str
    pin: str | None
    ticket: str
    tickets: JsonTickets
    workdir: Path
    framework: str = SDK
    label: str = "ai-sdk via @crossgate/ai-sdk (MockLanguageModelV4, in node)"

    async def start(self, run: str) -> Finished[object] | Parked:
        return self._outcome(await self._cli("start", run))

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        return self._outcome(await self._cli("resume", parked_run))

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSGATE_")}
        env.update(
            CROSSGATE_SERVER=self.url,
            CROSSGATE_AGENT_TOKEN=self.token,
            CROSSGATE_TICKETS=str(self.tickets.path),
            CROSSGATE_TICKET=self.ticket,
            CROSSGATE_WORK=str(self.workdir),
        )
        if self.pin is not None:
            env["CROSSGATE_AUTHORITY_PUBKEY"] = self.pin
        return env

    async def _cli(self, command: str, target: str) -> dict[str, Any]:
        node = shutil.which("node") or "node"
        # A plain Popen, waited on in a thread: cancelling (Ctrl-C) kills node, and nothing is left for the loop.
        process = subprocess.Popen(  # noqa: ASYNC220 (starting a process does not block; waiting is in a thread)
            [node, str(CLI), SDK, command, target], env=self._env(), cwd=WORKSPACE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.to_thread(process.communicate, timeout=TIMEOUT_SECONDS)
        except BaseException:
            process.kill()
            process.communicate()
            raise
        lines = out.decode("utf-8", "replace").strip().splitlines()
        try:
            answer: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        except ValueError:
            answer = {}
        if process.returncode != 0 or "error" in answer or "status" not in answer:
            detail = answer.get("message") or err.decode("utf-8", "replace").strip()[-500:]
            raise RuntimeError(f"the TypeScript agent's {command} failed: {detail}")
        return answer

    def _outcome(self, answer: dict[str, Any]) -> Finished[object] | Parked:
        if answer["status"] == "parked":
            return Parked(answer["run"], answer["parkedRun"], tuple(answer["requestIds"]))
        return Finished(answer["run"], answer.get("told") or "finished")

"""The TypeScript packages' own suite (adapters/typescript, node's test runner), run by the test command.

It builds the npm workspace and runs every package's tests against a live ``crossgate serve`` that the
node harness starts with this interpreter (``$CROSSGATE_PYTHON``). Without Node.js it is skipped with the
reason, except in CI, where a missing Node.js is a failure.

It is one pytest test, which one xdist worker runs while the others take the Python tests. The parallelism
within it is node's: test files run three at a time (``$CROSSGATE_TS_CONCURRENCY``
changes it). Each file has its own server, folder and ports, and spends most of its time waiting on
subprocesses (the server, the Python CLI, the Claude CLI), so files overlap well even on two cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

WORKSPACE = Path(__file__).resolve().parents[2] / "adapters" / "typescript"
MIN_NODE = (20, 19)

pytestmark = pytest.mark.slow


def _tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = "node" if node is None else "npm"
        if os.environ.get("CI"):
            pytest.fail(f"{missing} is not installed, so the TypeScript packages' tests cannot run in CI")
        pytest.skip(f"{missing} is not installed: the TypeScript packages' tests (adapters/typescript) did not run")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    found = tuple(int(part) for part in version.lstrip("v").split(".")[:2])
    if found < MIN_NODE:
        want = ".".join(map(str, MIN_NODE))
        if os.environ.get("CI"):
            pytest.fail(f"Node.js {version} is older than {want}, which the TypeScript packages need")
        pytest.skip(f"Node.js {version} is older than {want}: the TypeScript packages' tests did not run")
    return node, npm


def _run(npm: str, *args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [npm, *args], cwd=WORKSPACE, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.timeout(1500)
def test_typescript_packages() -> None:
    """``npm ci`` (when the workspace is not installed yet) and ``npm test`` in adapters/typescript pass."""
    _node, npm = _tools()
    env = {**os.environ, "CROSSGATE_PYTHON": sys.executable}
    if not (WORKSPACE / "node_modules" / ".package-lock.json").is_file():
        installed = _run(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", env=env, timeout=600)
        assert installed.returncode == 0, f"npm ci failed:\n{installed.stdout[-3000:]}\n{installed.stderr[-3000:]}"
    tested = _run(npm, "test", env=env, timeout=1400)
    tail = "\n".join((tested.stdout + tested.stderr).splitlines()[-80:])
    assert tested.returncode == 0, f"npm test failed in adapters/typescript:\n{tail}"
    assert "# fail 0" in tested.stdout, tail

"""The TypeScript packages' own suite (adapters/typescript, node's test runner), run by the test command.

It builds the npm workspace and runs every package's tests against a live ``crossgate serve`` that the
node harness starts with this interpreter (``$CROSSGATE_PYTHON``), on Node.js 22: the one ``.ci/node22``
installs into ``.tools/node22`` (``make typescript`` runs it), else the ``node`` on PATH if it is 22.13 or
newer (``@mastra/core`` 1 declares 22.13). Without it the test is skipped with the reason, except in CI,
where it is a failure. The machine's own older node (20.19 or newer), if there is one, then runs the
install test: the packages whose SDKs support Node 20 (``@crossgate/client``, ``@crossgate/langgraph``,
``@crossgate/langchain``) installed from their tarballs in a fresh folder, with no ``EBADENGINE``.

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

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = ROOT / "adapters" / "typescript"
NODE22 = ROOT / ".tools" / "node22"
"""Where ``.ci/node22`` installs Node.js 22 (``bin/node``, and ``include/`` for native modules' builds)."""
MIN_NODE = (22, 13)
OLDEST_NODE = (20, 19)
INSTALL_TEST = "packages/examples/dist-test/install.test.js"
INSTALLED_BY = WORKSPACE / "node_modules" / ".node-version"
"""The node that ran ``npm ci`` (its native modules are built for it), as ``make typescript`` writes it."""

pytestmark = pytest.mark.slow


def _version(node: str) -> tuple[int, int]:
    text = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    major, minor = text.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, so the TypeScript packages' tests cannot run in CI")
    pytest.skip(f"{reason}: the TypeScript packages' tests (adapters/typescript) did not run")


def _node22_env() -> tuple[str, dict[str, str]]:
    """The node the suite runs on, and an environment with it first on PATH."""
    env = {**os.environ, "CROSSGATE_PYTHON": sys.executable}
    if (NODE22 / "bin" / "node").is_file():
        env["PATH"] = f"{NODE22 / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["npm_config_nodedir"] = str(NODE22)
    node, npm = shutil.which("node", path=env.get("PATH")), shutil.which("npm", path=env.get("PATH"))
    if node is None or npm is None:
        _unavailable(f"{'node' if node is None else 'npm'} is not installed")
    assert node is not None
    if _version(node) < MIN_NODE:
        want = ".".join(map(str, MIN_NODE))
        _unavailable(f"Node.js {'.'.join(map(str, _version(node)))} is older than {want} (.ci/node22 installs 22)")
    return node, env


def _older_node() -> str | None:
    """The first node on PATH older than MIN_NODE and not older than OLDEST_NODE: the machine's own, if any."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "node"
        if not folder or not os.access(candidate, os.X_OK):
            continue
        if OLDEST_NODE <= _version(str(candidate)) < MIN_NODE:
            return str(candidate)
    return None


def _run(command: list[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=WORKSPACE, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    return "\n".join((done.stdout + done.stderr).splitlines()[-80:])


@pytest.mark.timeout(1800)
def test_typescript_packages() -> None:
    """``npm ci`` (unless installed by this node) and ``npm test`` on Node 22; the install test on Node 20."""
    node, env = _node22_env()
    version = _run([node, "--version"], env=env, timeout=30).stdout.strip()
    installed = INSTALLED_BY.read_text().strip() if INSTALLED_BY.is_file() else None
    if installed != version:
        done = _run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], env=env, timeout=900)
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        INSTALLED_BY.write_text(f"{version}\n")
    tested = _run(["npm", "test"], env=env, timeout=1400)
    assert tested.returncode == 0, f"npm test failed in adapters/typescript on Node {version}:\n{_tail(tested)}"
    assert "# fail 0" in tested.stdout, _tail(tested)

    older = _older_node()
    if older is None:
        return  # no Node 20 on this machine: the suite above is the whole test
    # The machine's node and its npm, first on PATH; native modules (none in the app) would build for it.
    env20 = {**env, "PATH": f"{Path(older).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env20.pop("npm_config_nodedir", None)
    done = _run([older, "--test", INSTALL_TEST], env=env20, timeout=900)
    assert done.returncode == 0, f"the install test failed on the machine's {older}:\n{_tail(done)}"
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout, _tail(done)

"""The README's from-source install, in a clean virtual environment per SDK, then a first gated call.

Each SDK gets a fresh ``python -m venv`` with nothing but what the documented command installs (by path,
or by VCS URL with ``#subdirectory=``). In it: the adapter alone is refused (pip cannot find the core),
the documented command installs, and ``first_call.py`` parks one ``delete_ticket`` call that the venv's
own ``crossgate approve`` decides, after which the resumed run deletes the ticket. Downloads are kept in
one pip cache (``$CROSSGATE_TEST_PIP_CACHE``, else ``~/.cache/crossgate-tests/pip``) shared by all of them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
FIRST_CALL = Path(__file__).with_name("first_call.py")
SDKS = ("openai", "claude", "langgraph", "agent-framework", "google-adk", "strands")
PATH_INSTALL = {sdk: f"pip install ./core ./adapters/{sdk}" for sdk in SDKS}


def core_version() -> Version:
    return Version(tomllib.loads((ROOT / "core/pyproject.toml").read_text())["project"]["version"])


def core_requirement(sdk: str) -> Requirement:
    project = tomllib.loads((ROOT / "adapters" / sdk / "pyproject.toml").read_text())["project"]
    [found] = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "crossgate"]
    return found


@pytest.mark.parametrize("sdk", SDKS)
def test_each_adapter_requires_the_cores_minor_series(sdk: str) -> None:
    version = core_version()
    specifier = core_requirement(sdk).specifier
    assert version in specifier
    assert Version(f"{version.major}.{version.minor + 1}") not in specifier, "a core of the next minor is refused"
    assert Version(f"{version.major}.{version.minor}") in specifier


@pytest.mark.parametrize("sdk", SDKS)
def test_the_readmes_document_the_install_this_test_runs(sdk: str) -> None:
    for readme in (ROOT / "README.md", ROOT / "adapters" / sdk / "README.md"):
        assert PATH_INSTALL[sdk] in readme.read_text(), readme
    vcs = (ROOT / "adapters" / sdk / "README.md").read_text()
    assert '"crossgate @ git+<repository URL>#subdirectory=core"' in vcs
    assert f' @ git+<repository URL>#subdirectory=adapters/{sdk}"' in vcs


def pip_cache() -> Path:
    return Path(os.environ.get("CROSSGATE_TEST_PIP_CACHE") or Path.home() / ".cache/crossgate-tests/pip")


def run(argv: list[str], cwd: Path, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CROSSGATE_DB")}
    env["PIP_CACHE_DIR"] = str(pip_cache())
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check:
        assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
    return done


def documented_install(sdk: str, tmp_path: Path) -> list[str]:
    """The README's command as argv: by VCS URL for openai (a git repository of this tree), else by path."""
    if sdk != "openai":
        return PATH_INSTALL[sdk].split()[2:]
    repo = tmp_path / "repo"
    for folder in ("core", "adapters/openai"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-C", str(repo)]
    for step in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "tree"]):
        run([*git, *step], tmp_path)
    url = f"git+file://localhost{repo}"  # a host, so that older pips take it as a URL
    return [f"crossgate @ {url}#subdirectory=core", f"crossgate-openai @ {url}#subdirectory=adapters/openai"]


@pytest.mark.slow
@pytest.mark.parametrize("sdk", [SDKS[0], pytest.param("claude", marks=pytest.mark.claude_cli), *SDKS[2:]])
def test_a_clean_venv_installs_from_source_and_gates_a_first_call(sdk: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-compile"]  # no .pyc: saves a minute

    alone = run([*pip, f"./adapters/{sdk}"], ROOT, check=False)
    assert alone.returncode != 0
    assert "No matching distribution found for crossgate" in alone.stderr

    run([*pip, *documented_install(sdk, tmp_path)], ROOT)
    work = tmp_path / "work"
    work.mkdir()
    python = str(venv / "bin/python")
    started = json.loads(run([python, str(FIRST_CALL), sdk, "start", str(work)], work).stdout.splitlines()[-1])
    assert started["outcome"] == "parked"
    assert not (work / "ran.txt").exists(), "nothing runs while the request is pending"

    [request_id] = started["request_ids"]
    crossgate = [str(venv / "bin/crossgate"), "--db", str(work / "crossgate.db")]
    listed = json.loads(run([*crossgate, "list", "--json"], work).stdout)
    assert [r["id"] for r in listed["items"]] == [request_id]
    run([*crossgate, "approve", request_id, "--reviewer", "ann"], work)

    resumed = json.loads(run([python, str(FIRST_CALL), sdk, "resume", str(work)], work).stdout.splitlines()[-1])
    assert resumed["outcome"] == "finished"
    assert (work / "ran.txt").read_text().split() == ["t3"], "the approved call ran, once"

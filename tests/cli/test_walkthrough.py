"""``examples/cli_walkthrough.py`` runs end to end, offline, and every step does what it says."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "cli_walkthrough.py"

pytestmark = pytest.mark.slow


@pytest.fixture
def walkthrough(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.delenv("CROSSGATE_DB", raising=False)
    monkeypatch.delenv("CROSSGATE_POLICY", raising=False)
    spec = importlib.util.spec_from_file_location("cli_walkthrough", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(walkthrough: ModuleType, capsys: pytest.CaptureFixture[str]) -> str:
    assert walkthrough.main() == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^  pending: req_", out, re.MULTILINE)) >= 3
    assert re.search(r"^  approved req_\w+ \(write_file\) as ann$", out, re.MULTILINE)
    assert re.search(
        r"^  remembered as standing rule rule_\w+: allow write_file "
        r'where path matches "notes/\*", for the rest of run s-1$',
        out,
        re.MULTILINE,
    )
    assert re.search(r"^  edited req_\w+ \(delete_ticket\) as ann$", out, re.MULTILINE)
    assert re.search(r"^  rejected req_\w+ \(execute_sql\) as ann$", out, re.MULTILINE)
    assert "crossgate: error: request req_" in out and "was already decided (reject)" in out
    assert "  allowed by policy: Standing rule rule_" in out
    assert re.search(r'^  decision +edit \{"id": "t2"\}$', out, re.MULTILINE)  # keys aligned to the widest shown
    assert "  audit log intact: 9 events verified" in out
    return out


def test_the_walkthrough_runs_under_the_example_policy(
    walkthrough: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert walkthrough.POLICY.exists()
    out = run(walkthrough, capsys)
    assert "  denied by policy: Dropping or truncating tables" in out
    assert "(rule review-ticket-deletes: Deleting a ticket cannot be undone.)" in out


def test_the_walkthrough_runs_under_the_built_in_policy(
    walkthrough: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walkthrough, "POLICY", tmp_path / "absent.yaml")
    out = run(walkthrough, capsys)
    assert "policy (built-in: ask for everything)" in out
    assert "denied by policy" not in out

"""The Claude example runs offline, against the scripted Messages API, and ends as the seed says."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "claude_agent_tickets.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("claude_agent_tickets", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.claude_cli
@pytest.mark.slow
def test_example_runs_offline(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    summary = load().main()
    assert summary["deleted"] == ["t3"]
    assert summary["left"] == ["t1", "t2"]
    assert summary["log"] == [
        'asked: delete_ticket {"id": "t3"}, tickets now t1 t2 t3, approved',
        'asked: delete_ticket {"id": "t1"}, tickets now t1 t2, rejected',
    ]
    assert "deleted: t3, left: t1 t2" in capsys.readouterr().out

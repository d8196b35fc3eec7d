"""The example runs offline with the scripted model, start to finish."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openai_agents_tickets.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openai_agents_tickets", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_runs_offline(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    load().main()
    assert capsys.readouterr().out.splitlines() == [
        'asked: delete_ticket {"id": "t3"}, tickets now t1 t2 t3, approve',
        'asked: delete_ticket {"id": "t1"}, tickets now t1 t2, reject',
        "final: Deleted the spam ticket t3; t1 stays.",
        "left: t1 t2",
    ]

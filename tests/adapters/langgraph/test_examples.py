"""The adapter's examples run offline and do what their docstrings say."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_langgraph_tickets_example(capsys: pytest.CaptureFixture[str]) -> None:
    result = load("langgraph_tickets").main()
    assert result["outcomes"] == {"a": "deleted t3", "b": "kept t1: t1 is a real customer ticket."}
    assert result["left"] == ["t1", "t2"]
    assert result["audit_ok"]
    assert "tickets still ['t1', 't2', 't3']" in capsys.readouterr().out


def test_langchain_agent_example() -> None:
    result = load("langchain_agent").main()
    told = result["told"]
    assert told["write_file"].endswith("wrote 5 bytes to archive/report.txt")
    assert "Never delete users; archive them instead." in told["execute_sql"]
    assert told["read_data"] == "3 rows from users"

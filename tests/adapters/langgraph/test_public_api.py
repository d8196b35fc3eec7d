"""The package's public surface: short, sorted, importable, and the graph part free of LangChain."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import pytest

import crossgate_langgraph
from crossgate.runs import Resumer
from crossgate_langgraph import DECISION_SCHEMA, Gate


def isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions, each sorted."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = crossgate_langgraph.__all__
    assert names == sorted(names, key=isort_key)
    assert len(names) <= 13
    for name in names:
        assert getattr(crossgate_langgraph, name) is not None


def test_the_gate_is_a_resumer() -> None:
    assert Gate.framework == "langgraph"
    assert isinstance(Gate.__dict__["resume"], type(lambda: None))
    resumer: type[Resumer] = Gate  # type: ignore[assignment]
    assert resumer is Gate


def test_the_decision_schema_is_the_neutral_decision() -> None:
    kinds = {branch["properties"]["kind"]["const"] for branch in DECISION_SCHEMA["oneOf"]}
    assert kinds == {"approve", "edit", "reject", "respond"}
    assert "$ref" not in str(DECISION_SCHEMA)
    jsonschema.validate({"kind": "edit", "args": {"id": "t2"}}, DECISION_SCHEMA)
    for refused in ({"kind": "approved"}, {"kind": "reject"}, "yes", True):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(refused, DECISION_SCHEMA)


def test_importing_the_package_does_not_import_langchain() -> None:
    code = "import sys, crossgate_langgraph; print('langchain.agents' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"

"""The public surface of crossgate_openai: a short sorted ``__all__`` and the published capability table."""

from __future__ import annotations

import inspect

import crossgate_openai
from crossgate import DecisionKind
from crossgate.runs import Resumer
from crossgate_openai import CAPABILITIES, DECISION_MAPPING, FRAMEWORK, Gate


def test_all_is_short_sorted_and_importable() -> None:
    assert crossgate_openai.__all__ == sorted(crossgate_openai.__all__)
    assert crossgate_openai.__all__ == ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]
    for name in crossgate_openai.__all__:
        assert getattr(crossgate_openai, name) is not None


def test_the_capability_table_covers_every_decision() -> None:
    assert set(CAPABILITIES) == set(DecisionKind)
    assert set(DECISION_MAPPING) == set(DecisionKind)
    assert "rejection_message" in DECISION_MAPPING[DecisionKind.REJECT]
    assert "edited arguments" in DECISION_MAPPING[DecisionKind.EDIT]


def test_gate_has_the_resumer_shape() -> None:
    assert Gate.framework == FRAMEWORK == "openai-agents"
    for member in Resumer.__dict__:
        if not member.startswith("_"):
            assert hasattr(Gate, member), member
    resume = inspect.signature(Gate.resume)
    assert list(resume.parameters)[:2] == ["self", "parked_run"]
    assert all(p.default is not inspect.Parameter.empty for p in list(resume.parameters.values())[2:])
    assert inspect.iscoroutinefunction(Gate.resume)
    assert inspect.iscoroutinefunction(Gate.run)

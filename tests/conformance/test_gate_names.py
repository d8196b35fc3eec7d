"""One name per concept across the adapters' ``Gate``: ``agent`` is a crossgate agent name, never an SDK object.

Each adapter takes its SDK's object under its own explicit name (``options``, ``graphs``/``graph``,
``sdk_agent``), so ``agent=`` means the same thing in every adapter.
"""

from __future__ import annotations

import inspect
import typing

import pytest

import crossgate_agent_framework
import crossgate_claude
import crossgate_google_adk
import crossgate_langgraph
import crossgate_openai
import crossgate_pydantic_ai
from crossgate import ReviewQueue
from crossgate.stores import MemoryStore

GATES = [
    crossgate_agent_framework.Gate,
    crossgate_claude.Gate,
    crossgate_google_adk.Gate,
    crossgate_langgraph.Gate,
    crossgate_openai.Gate,
    crossgate_pydantic_ai.Gate,
]
ENTRY_POINTS = ("__init__", "run", "resume", "install", "add_graph")


@pytest.mark.parametrize("gate", GATES, ids=lambda g: g.__module__.split(".")[0])
def test_a_parameter_named_agent_is_always_a_name(gate: type) -> None:
    for member in ENTRY_POINTS:
        method = getattr(gate, member, None)
        if method is None:
            continue
        hints = typing.get_type_hints(method)
        for name in inspect.signature(method).parameters:
            if name == "agent":
                assert hints[name] in (str, str | None), f"{gate.__module__}.{member}({name}: {hints[name]})"


@pytest.mark.parametrize(
    "gate",
    [crossgate_openai.Gate, crossgate_pydantic_ai.Gate, crossgate_agent_framework.Gate, crossgate_google_adk.Gate],
    ids=["openai", "pydantic_ai", "agent_framework", "google_adk"],
)
def test_the_sdk_agent_has_its_own_parameter(gate: type) -> None:
    for member in ("__init__", "run", "resume"):
        params = inspect.signature(getattr(gate, member)).parameters
        assert "sdk_agent" in params, member
        assert "agent" not in params, member
    with pytest.raises(TypeError, match="agent"):
        gate(ReviewQueue(MemoryStore()), agent=object())

"""Timeouts and apply windows too long for a date are refused with a clear error, and nothing is stored."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crossgate import ConfigurationError, Policy, PolicyRule, ReviewQueue, ToolCall, open_store
from crossgate.limits import MAX_SECONDS


def _call() -> ToolCall:
    return ToolCall(framework="test", tool="delete_ticket", args={"id": "t1"})


@pytest.mark.parametrize("timeout", [1e300, MAX_SECONDS + 1, 0, -5, float("nan"), float("inf")])
def test_an_adapter_timeout_out_of_range_is_refused_and_stores_nothing(timeout: float) -> None:
    queue = ReviewQueue(open_store("memory:"), Policy())
    with pytest.raises(ConfigurationError, match="timeout_seconds"):
        queue.submit(_call(), timeout_seconds=timeout)
    assert queue.pending() == [] and queue.events() == []


def test_the_longest_timeout_is_taken() -> None:
    queue = ReviewQueue(open_store("memory:"), Policy())
    request = queue.submit(_call(), timeout_seconds=MAX_SECONDS).request
    assert request is not None and request.expires_at is not None


@pytest.mark.parametrize("field", ["timeout_seconds", "apply_within_seconds"])
def test_a_policy_rule_with_a_span_too_long_for_a_date_is_refused_at_load(field: str) -> None:
    with pytest.raises(ValidationError):
        PolicyRule.model_validate({"name": "r", "verdict": "ask", "tool": "x", field: 1e300})
    with pytest.raises(ValidationError):
        Policy.model_validate({"default": "ask", f"default_{field}": 1e300})
    assert PolicyRule.model_validate({"name": "r", "verdict": "ask", "tool": "x", field: MAX_SECONDS})

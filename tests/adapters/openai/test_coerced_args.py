"""Issue 11, class 1, on the OpenAI Agents SDK: the policy judges the arguments the tool will receive.

A model may spell a denied amount another way (``"1000000"``, ``1000000.0``, ``true`` for an int, an extra
field). Whatever the SDK does with each spelling, the refund of 1,000,000 never runs: either the SDK's tool
schema refuses the spelling before the tool, or the deny rule sees the converted value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, function_tool

from crossgate import ArgCondition, MatchKind, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.runs import Finished
from crossgate_openai import Gate
from crossgate_openai.testing import PlannedModel, tool_call, tool_results

NO_BIG_REFUNDS = "Refunds of a million need the finance team; do not retry."
POLICY = Policy(
    rules=(
        PolicyRule(
            name="no-big-refunds",
            verdict=VerdictKind.DENY,
            tool="refund_customer",
            where=(ArgCondition(arg="amount", kind=MatchKind.EQUALS, value=1000000),),
            reason=NO_BIG_REFUNDS,
        ),
    ),
    default=VerdictKind.ALLOW,
)


def refund_agent(model: PlannedModel, refunded: list[int]) -> Agent[Any]:
    @function_tool
    def refund_customer(customer: str, amount: int) -> str:
        """Refund ``amount`` cents to ``customer``."""
        refunded.append(amount)
        return f"refunded {amount}"

    return Agent(name="Billing", tools=[refund_customer], model=model)


SCHEMA = "arguments fail the tool's schema"


@pytest.mark.parametrize(
    ("args", "refused_by"),
    [
        ({"customer": "c1", "amount": 1000000}, NO_BIG_REFUNDS),
        ({"customer": "c1", "amount": "1000000"}, SCHEMA),
        ({"customer": "c1", "amount": 1000000.0}, NO_BIG_REFUNDS),
        ({"customer": "c1", "amount": " 1000000 "}, SCHEMA),
        ({"customer": "c1", "amount": "1e6"}, SCHEMA),
        ({"customer": "c1", "amount": 1000000, "note": "extra field"}, SCHEMA),
    ],
    ids=["int", "string", "float", "padded", "exponent", "extra-field"],
)
async def test_no_spelling_of_a_denied_amount_runs_the_refund(
    make_queue: Callable[..., ReviewQueue], args: dict[str, Any], refused_by: str
) -> None:
    queue = make_queue(POLICY)
    refunded: list[int] = []
    model = PlannedModel([[tool_call("refund_customer", args, "call_refund")]], final="Done.")
    outcome = await Gate(queue).run(refund_agent(model, refunded), "refund c1", run="billing")
    assert isinstance(outcome, Finished)
    assert 1000000 not in refunded and refunded == []
    [told] = tool_results(model.inputs, "refund_customer")
    assert told.startswith("crossgate did not run refund_customer") and refused_by in told


async def test_an_allowed_amount_still_runs_once(make_queue: Callable[..., ReviewQueue]) -> None:
    queue = make_queue(POLICY)
    refunded: list[int] = []
    model = PlannedModel([[tool_call("refund_customer", {"customer": "c1", "amount": 500}, "call_refund")]])
    assert isinstance(await Gate(queue).run(refund_agent(model, refunded), "refund", run="b2"), Finished)
    assert refunded == [500]

"""The verdict is for the arguments the tool receives: pinned for the Claude CLI's own conversions.

The CLI converts an MCP call's arguments to the tool's input schema before the PreToolUse hook sees them
where it can (``"amount": "1000000"`` arrives as the number, ``"true"`` as the boolean), and hands on what
it cannot (``"1e6"``), which crossgate refuses on the tool's schema before the policy judges it. This test
pins both through the real bundled CLI, with string, number, boolean and extra-field variants against a
deny on ``amount`` equals 1000000: a CLI upgrade that converts differently fails here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

from crossgate import ArgCondition, MatchKind, MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.runs import Finished
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI
from tests.adapters.claude.review import told

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

NO_MILLION = "Refunds of 1000000 need the finance team. Do not retry."
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "customer": {"type": "string"}, "notify": {"type": "boolean"}},
    "required": ["amount", "customer"],
}
VARIANTS: list[dict[str, Any]] = [
    {"amount": 1000000, "customer": "c1"},
    {"amount": 1000000.0, "customer": "c1"},
    {"amount": "1000000", "customer": "c1"},
    {"amount": "1000000.0", "customer": "c1"},
    {"amount": "1e6", "customer": "c1"},
    {"amount": " 1000000 ", "customer": "c1"},
    {"amount": 1000000, "customer": "c1", "notify": "true"},
    {"amount": "1000000", "customer": "c1", "notify": True},
    {"amount": 1000000, "customer": "c1", "memo": "an extra field"},
    {"amount": "1000000", "customer": "c1", "memo": "an extra field"},
]


async def test_every_spelling_of_a_denied_amount_is_denied_or_never_reaches_the_tool(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI
) -> None:
    refunded: list[dict[str, Any]] = []

    @tool("refund_customer", "Refund a customer.", SCHEMA)
    async def refund_customer(args: dict[str, Any]) -> dict[str, Any]:
        refunded.append(args)
        return {"content": [{"type": "text", "text": f"refunded {args['amount']}"}]}

    deny = PolicyRule(
        name="no-million",
        verdict=VerdictKind.DENY,
        tool="refund_customer",
        where=(ArgCondition(arg="amount", kind=MatchKind.EQUALS, value=1000000),),
        reason=NO_MILLION,
    )
    queue = ReviewQueue(MemoryStore(), Policy(rules=(deny,), default=VerdictKind.ALLOW))
    server = create_sdk_mcp_server("pay", tools=[refund_customer])
    options = replace(cli_options, tools=[], mcp_servers={"pay": server})
    script = "\n".join(
        f"CALL refund_customer {json.dumps(args)}" for args in [*VARIANTS, {"amount": 5, "customer": "c2"}]
    )
    done = await Gate(queue, options=options).run(script)
    assert isinstance(done, Finished)

    # Every variant was refused: by the policy for what the CLI converted (the hook saw the number), and by
    # crossgate on the tool's schema for what it could not ("1e6": a server might still convert it).
    results = told(messages_api.requests)
    assert results[-1] == (False, "refunded 5")
    assert refunded == [{"amount": 5, "customer": "c2"}], "only the small refund ran"
    outcomes = []
    for variant, (is_error, text) in zip(VARIANTS, results[:-1], strict=True):
        assert is_error, f"{variant} ran: {text}"
        outcomes.append("policy" if NO_MILLION in text else "schema" if "fail the tool's schema" in text else text)
    assert outcomes == ["policy"] * 3 + ["schema"] * 3 + ["policy"] * 4, "the CLI converts arguments differently"
    judged = [e.payload["args"] for e in queue.events() if e.kind == "auto_denied"]
    assert all(args["amount"] == 1000000 for args in judged)  # the number, whatever the model wrote
    assert [args.get("notify") for args in judged[3:5]] == [True, True]  # "true" became the boolean
    refused = [e.payload for e in queue.events() if e.kind in ("ran", "not_run") and e.payload["ran"] is False]
    assert [p["args"]["amount"] for p in refused] == ["1000000.0", "1e6", " 1000000 "]  # type: ignore[index]
    queue.close()

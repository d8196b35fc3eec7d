"""The app's context reaches every Claude call (``Gate(context=)``, ``run(call_context=)``), resumes too.

Through the SDK's real client against the in-process CLI double.
"""

from __future__ import annotations

import json

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from crossgate import Approve, ArgCondition, ConfigurationError, MatchKind, PolicyRule, ReviewQueue, VerdictKind
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from tests.adapters.claude.fake_cli import World
from tests.conformance.tickets import TicketStore

ACME_KEEPS_T1 = "Ticket t1 belongs to acme's audit; it is never deleted."


def calls(*ids: str) -> str:
    return "\n".join(f"CALL delete_ticket {json.dumps({'id': i})}" for i in ids)


@pytest.mark.parametrize("given", ["gate", "run"])
async def test_a_context_deny_holds_after_a_resume_by_a_gate_without_it(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore, given: str
) -> None:
    rule = PolicyRule(
        name="acme-keeps-t1",
        verdict=VerdictKind.DENY,
        tool="delete_ticket",
        where=(ArgCondition(arg="id", kind=MatchKind.EQUALS, value="t1"),),
        context=(ArgCondition(arg="tenant", kind=MatchKind.EQUALS, value="acme"),),
        reason=ACME_KEEPS_T1,
    )
    queue.policy = queue.policy.model_copy(update={"rules": (rule, *queue.policy.rules)})
    settings = {"options": fake_options, "transport": world.transport, "resume_timeout": 2.0}
    if given == "gate":
        first = await Gate(queue, context={"tenant": "acme"}, **settings).run(calls("t3", "t1"))  # type: ignore[arg-type]
    else:
        first = await Gate(queue, **settings).run(calls("t3", "t1"), call_context={"tenant": "acme"})  # type: ignore[arg-type]
    assert isinstance(first, Parked)
    [t3] = first.request_ids
    assert queue.get(t3).call.context["tenant"] == "acme"
    queue.decide(t3, Approve(), reviewer="ann")

    done = await Gate(queue, **settings).resume(first.parked_run)  # type: ignore[arg-type]
    assert isinstance(done, Finished), "t1 was asked about: the resumed session lost its tenant"
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    [denied] = [e.payload for e in queue.events() if e.kind == "auto_denied"]
    assert (denied["args"], denied["context"]["tenant"]) == ({"id": "t1"}, "acme")  # type: ignore[index]


async def test_the_app_cannot_say_who_the_run_acts_for_nor_which_server_offers_a_tool(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions
) -> None:
    context = {"requested_by": "lead", "mcp_server": "trusted", "tenant": "acme"}
    gate = Gate(queue, options=fake_options, transport=world.transport, context=context)  # type: ignore[arg-type]
    parked = await gate.run(calls("t3"))
    assert isinstance(parked, Parked)
    request = queue.get(parked.request_ids[0])
    assert "requested_by" not in request.call.context
    assert (request.call.context["mcp_server"], request.call.context["tenant"]) == ("tickets", "acme")


async def test_a_context_that_is_not_a_json_object_is_refused(queue: ReviewQueue) -> None:
    with pytest.raises(ConfigurationError, match="call context must be a JSON object"):
        Gate(queue, context={"when": object()})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match="call context must be a JSON object"):
        Gate(queue).options(call_context=["tenant"])  # type: ignore[arg-type]

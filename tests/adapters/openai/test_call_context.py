"""The app's context reaches every call of an OpenAI run (``Gate(context=)``, ``run(call_context=)``), resumes too.

``Gate.run(context=)`` is the SDK's own run context; crossgate's is separate, so a policy ``context:`` rule
(a tenant, as in the docs) holds on the OpenAI Agents SDK as it does on Claude.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from crossgate import (
    Approve,
    ArgCondition,
    ConfigurationError,
    MatchKind,
    Policy,
    PolicyRule,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from tests.adapters.openai.conftest import ASK_DELETES
from tests.adapters.openai.scripted import PlannedModel, delete_call, ticket_agent, tool_results
from tests.conformance.tickets import TicketStore

ACME = (ArgCondition(arg="tenant", kind=MatchKind.EQUALS, value="acme"),)
ACME_KEEPS_T1 = "Ticket t1 belongs to acme's audit; it is never deleted."
POLICY = Policy(
    rules=(
        PolicyRule(
            name="acme-keeps-t1",
            verdict=VerdictKind.DENY,
            tool="delete_ticket",
            where=(ArgCondition(arg="id", kind=MatchKind.EQUALS, value="t1"),),
            context=ACME,
            reason=ACME_KEEPS_T1,
        ),
        ASK_DELETES,
    ),
    default=VerdictKind.ALLOW,
)


@pytest.mark.parametrize("given", ["gate", "run"])
async def test_a_context_deny_holds_and_the_context_is_restored_on_resume(
    make_queue: Callable[..., ReviewQueue], tickets: TicketStore, given: str
) -> None:
    queue = make_queue(POLICY)
    model = PlannedModel([[delete_call("t3")], [delete_call("t1")]], final="Done.")
    if given == "gate":
        first = await Gate(queue, context={"tenant": "acme"}).run(ticket_agent(tickets, model), "go", run="acme")
    else:
        first = await Gate(queue).run(ticket_agent(tickets, model), "go", run="acme", call_context={"tenant": "acme"})
    assert isinstance(first, Parked)
    [t3] = first.request_ids
    assert queue.get(t3).call.context == {"tenant": "acme"}
    queue.decide(t3, Approve(), reviewer="ann")

    # Another gate, on another queue object, with no context of its own: the parked run's is used.
    done = await Gate(make_queue(POLICY), sdk_agent=ticket_agent(tickets, model)).resume(first.parked_run)
    assert isinstance(done, Finished), "t1 was asked about (or ran): the run lost its tenant on resume"
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t1") == 0
    assert tool_results(model.inputs) == ["deleted ticket t3", f"crossgate did not run delete_ticket: {ACME_KEEPS_T1}"]
    [denied] = [e.payload for e in queue.events() if e.kind == "auto_denied"]
    assert denied["context"] == {"tenant": "acme"}


async def test_without_the_tenant_the_rule_does_not_apply_and_a_bad_context_is_refused(
    make_queue: Callable[..., ReviewQueue], tickets: TicketStore
) -> None:
    queue = make_queue(POLICY)
    model = PlannedModel([[delete_call("t1")]], final="Done.")
    other = await Gate(queue, context={"tenant": "globex"}).run(ticket_agent(tickets, model), "go", run="globex")
    assert isinstance(other, Parked)  # asked, not denied
    # The app's key cannot stand in for who the run acts for.
    gate = Gate(queue, context={"requested_by": "lead"})
    pat = await gate.run(ticket_agent(tickets, model), "go", run="pat", requested_by="pat")
    assert isinstance(pat, Parked)
    assert queue.get(pat.request_ids[0]).call.context["requested_by"] == "pat"
    nobody = await gate.run(ticket_agent(tickets, model), "go", run="nobody")
    assert isinstance(nobody, Parked)
    assert "requested_by" not in queue.get(nobody.request_ids[0]).call.context
    with pytest.raises(ConfigurationError, match="call context must be a JSON object"):
        Gate(queue, context={"when": object()})  # type: ignore[dict-item]
    with pytest.raises(ConfigurationError, match="call context must be a JSON object"):
        await Gate(queue).run(ticket_agent(tickets, model), "go", call_context=["tenant"])  # type: ignore[arg-type]

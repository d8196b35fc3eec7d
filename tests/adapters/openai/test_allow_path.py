"""The allow path: a call the policy allows or denies is judged once and reads no request.

A tool the policy may ask about is judged by its ``needs_approval``; one it never asks about has
``needs_approval=False`` (the SDK's approval machinery is skipped) and is judged where it is invoked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents.models.interface import Model
from agents.tool_context import ToolContext

import crossgate_openai._scope as scopes
import crossgate_openai._tools as tools
from crossgate import Approve, Policy, PolicyRule, Reject, RequestStatus, ReviewQueue, VerdictKind
from crossgate.policy.rules import ArgCondition, MatchKind
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from crossgate_openai._scope import RunScope, run_scope
from tests.adapters.openai.scripted import Call, PlannedModel, delete_call, ticket_agent, tool_results
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

ALLOW = Policy(default=VerdictKind.ALLOW)
ASK_T9 = PolicyRule(
    name="ask-t9",
    verdict=VerdictKind.ASK,
    tool=TOOL,
    where=(ArgCondition(arg="id", kind=MatchKind.EQUALS, value="t9"),),
)
MAY_ASK = Policy(rules=(ASK_T9,), default=VerdictKind.ALLOW)
"""Allows the calls these tests make, but may ask about the tool: its ``needs_approval`` is crossgate's."""
DENY_T1 = PolicyRule(
    name="keep-t1",
    verdict=VerdictKind.DENY,
    tool=TOOL,
    where=(ArgCondition(arg="id", kind=MatchKind.EQUALS, value="t1"),),
    reason="t1 is real",
)


class Counted:
    """Counts the queue's evaluations and request reads, and the gated tools' argument checks."""

    def __init__(self, queue: ReviewQueue, monkeypatch: pytest.MonkeyPatch) -> None:
        self.evaluations = self.reads = self.checks = 0
        evaluate, get_request = queue.evaluate, queue.store.get_request
        validate, check_schema = tools.validate_args, tools.check_args_schema

        def counted_evaluate(call: Any) -> Any:
            self.evaluations += 1
            return evaluate(call)

        def counted_read(request_id: str) -> Any:
            self.reads += 1
            return get_request(request_id)

        def counted_validate(args: Any, schema: Any) -> None:
            self.checks += 1
            validate(args, schema)

        def counted_check(args: Any, schema: Any) -> None:  # parsed arguments: only the schema is checked
            self.checks += 1
            check_schema(args, schema)

        monkeypatch.setattr(queue, "evaluate", counted_evaluate)
        monkeypatch.setattr(queue.store, "get_request", counted_read)
        monkeypatch.setattr(tools, "validate_args", counted_validate)
        monkeypatch.setattr(tools, "check_args_schema", counted_check)


async def test_allowed_and_denied_calls_are_judged_once_and_read_no_request(
    make_queue: Any, tickets: TicketStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = make_queue(Policy(rules=(DENY_T1,), default=VerdictKind.ALLOW))
    model = PlannedModel([[delete_call("t3"), delete_call("t1")], [delete_call("t2")]], final="Done.")
    agent = ticket_agent(tickets, model)
    counted = Counted(queue, monkeypatch)
    outcome = await Gate(queue).run(agent, "go", run="allowed")
    assert isinstance(outcome, Finished)
    assert (counted.evaluations, counted.checks, counted.reads) == (3, 3, 0)
    assert tickets.ids() == ["t1"]
    assert tool_results(model.inputs)[1] == "crossgate did not run delete_ticket: t1 is real"
    # The two calls of the first turn run concurrently: their records interleave in either order.
    recorded = sorted((e.payload["call_id"], e.kind, e.payload.get("ran")) for e in queue.events())
    assert recorded == [
        ("call_t1", "auto_denied", None),
        ("call_t1", "not_run", False),
        ("call_t2", "auto_allowed", None),
        ("call_t2", "ran", True),
        ("call_t3", "auto_allowed", None),
        ("call_t3", "ran", True),
    ]
    assert queue.verify_audit().ok


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "stale"])
async def test_a_verdict_older_than_its_window_is_judged_again_at_invocation(
    make_queue: Any, tickets: TicketStore, monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    """A standing deny added between ``needs_approval`` and the invocation stops the call once the verdict is stale."""
    queue = make_queue(MAY_ASK)
    model = PlannedModel([[delete_call("t3")]], final="Done.")
    agent = ticket_agent(tickets, model)
    Gate(queue).install(agent)
    asked = agent.tools[0].needs_approval

    async def then_deny(*args: Any) -> bool:
        answer: bool = await asked(*args)
        queue.add_rule(queue.new_rule(effect=VerdictKind.DENY, tool=TOOL, message="stop: t3 is needed"))
        return answer

    agent.tools[0].needs_approval = then_deny
    monkeypatch.setattr(tools.GatedInvoker, "bind", lambda self, binding: None)  # keep then_deny through run()
    if not fresh:
        monkeypatch.setattr(scopes, "JUDGED_FOR_SECONDS", -1.0)
    counted = Counted(queue, monkeypatch)
    assert isinstance(await Gate(queue).run(agent, "go"), Finished)
    if fresh:  # the verdict of a moment ago stands, as it would for a rule added just after the call started
        assert (counted.evaluations, tickets.delete_runs("t3")) == (1, 1)
    else:
        assert (counted.evaluations, tickets.delete_runs("t3")) == (2, 0)
        assert tool_results(model.inputs) == ["crossgate did not run delete_ticket: stop: t3 is needed"]


@pytest.mark.parametrize(
    "raw", ['{"id": "t1"}', '{"id": "t3", "extra": 1}', '{"id": true}'], ids=["other", "extra-key", "other-type"]
)
async def test_an_invocation_with_other_arguments_than_the_judged_ones_is_checked_and_judged_afresh(
    make_queue: Any, tickets: TicketStore, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    queue = make_queue(Policy(rules=(DENY_T1, ASK_T9), default=VerdictKind.ALLOW))
    agent = ticket_agent(tickets, PlannedModel([[]]))
    Gate(queue).install(agent)
    gated = agent.tools[0]
    scope = RunScope("judged")
    counted = Counted(queue, monkeypatch)
    with run_scope(scope):
        assert await gated.needs_approval(None, {"id": "t3"}, "call_t3") is False  # type: ignore[operator, union-attr]
        context = ToolContext(context=None, tool_name=TOOL, tool_call_id="call_t3", tool_arguments=raw)
        told = await gated.on_invoke_tool(context, raw)  # type: ignore[union-attr]
    assert tickets.delete_runs() == 0, "only the judged arguments may run on the judged verdict"
    assert told.startswith("crossgate did not run delete_ticket")
    assert counted.checks == 2
    assert scope.judged == {}


def test_only_a_tool_the_policy_may_ask_about_has_crossgates_needs_approval(
    make_queue: Any, tickets: TicketStore
) -> None:
    for policy, pauses in [
        (ALLOW, False),
        (Policy(rules=(DENY_T1,), default=VerdictKind.ALLOW), False),
        (MAY_ASK, True),
        (Policy(), True),  # the default asks
        (Policy(rules=(PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),)), True),
        (Policy(rules=(PolicyRule(name="all", verdict=VerdictKind.ALLOW, tool=TOOL),)), False),
    ]:
        agent = ticket_agent(tickets, PlannedModel([[]]))
        Gate(make_queue(policy)).install(agent)
        assert isinstance(agent.tools[0].needs_approval, tools.ApprovalPolicy) is pauses, policy


class PolicyChangesAfterFirstTurn(Model):
    """The scripted model, and the queue's policy replaced once the first model turn has answered."""

    def __init__(self, inner: PlannedModel, queue: ReviewQueue, policy: Policy) -> None:
        self.inner, self.queue, self.policy = inner, queue, policy

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        response = await self.inner.get_response(*args, **kwargs)
        self.queue.policy = self.policy
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.stream_response(*args, **kwargs)


async def test_a_policy_that_starts_asking_mid_run_refuses_the_call_and_pauses_for_the_next(
    make_queue: Any, tickets: TicketStore
) -> None:
    """The tool had ``needs_approval=False`` (the policy allowed every call): it runs nothing, the next call pauses."""
    queue = make_queue(ALLOW)
    again = Call(TOOL, json.dumps({"id": "t3"}), "call_t3_again")
    planned = PlannedModel([[delete_call("t3")], [again]], final="Done.")
    agent = ticket_agent(tickets, PolicyChangesAfterFirstTurn(planned, queue, Policy()))
    gate = Gate(queue)
    parked = await gate.run(agent, "go", run="turned")
    assert tickets.delete_runs("t3") == 0
    assert tool_results(planned.inputs) == [tools.ASKS_NOW.format(tool=TOOL)]
    assert isinstance(parked, Parked)
    (request,) = [queue.get(r) for r in parked.request_ids]
    assert (request.status, request.call.call_id) == (RequestStatus.PENDING, "call_t3_again")
    cancelled = [r for r in queue.list_requests().items if r.id != request.id]
    assert [r.status for r in cancelled] == [RequestStatus.CANCELLED]
    queue.decide(request.id, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run, sdk_agent=agent), Finished)
    assert tickets.delete_runs("t3") == 1
    assert queue.verify_audit().ok


async def test_a_rejection_holds_when_the_run_resumes_under_a_policy_that_no_longer_asks(
    make_queue: Any, tickets: TicketStore
) -> None:
    """Parked under an asking policy, rejected, then resumed where the tool has ``needs_approval=False``."""
    queue = make_queue(Policy())
    model = PlannedModel([[delete_call("t3")]], final="Done.")
    agent = ticket_agent(tickets, model)
    parked = await Gate(queue).run(agent, "go", run="rejected-then-allowed")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Reject(message="t3 stays"), reviewer="ann")
    allowing = make_queue(ALLOW)
    outcome = await Gate(allowing).resume(parked.parked_run, sdk_agent=agent)
    assert isinstance(outcome, Finished)
    assert tickets.delete_runs("t3") == 0
    assert "t3 stays" in tool_results(model.inputs)[0]

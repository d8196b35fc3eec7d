"""Gate.run and Gate.resume through the SDK's real run loop, with a scripted model, streamed and not."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, function_tool

from crossgate import (
    Approve,
    DecisionKind,
    Edit,
    InvalidArgumentsError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RequestStatus,
    Respond,
    ReviewQueue,
    VerdictKind,
)
from crossgate.runs import Finished, Parked
from crossgate_openai import FRAMEWORK, Gate
from tests.adapters.openai.conftest import ASK_DELETES, REJECTION
from tests.adapters.openai.scripted import PlannedModel, delete_call, outputs_by_call, ticket_agent, tool_results
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])


def parallel_agent(tickets: TicketStore, *ids: str) -> tuple[Any, PlannedModel]:
    """The seed's agent whose model asks for every delete of ``ids`` in one turn."""
    model = PlannedModel([[delete_call(t) for t in ids]], final="Deleted the spam.")
    return ticket_agent(tickets, model), model


def one_by_one_agent(tickets: TicketStore, *ids: str) -> tuple[Any, PlannedModel]:
    model = PlannedModel([[delete_call(t)] for t in ids], final="Done.")
    return ticket_agent(tickets, model), model


@STREAM
async def test_seed_scenario_approve_t3_reject_t1(queue: ReviewQueue, tickets: TicketStore, stream: bool) -> None:
    agent, model = parallel_agent(tickets, "t3", "t1")
    parked = await Gate(queue).run(agent, "Delete the spam tickets.", run="seed", stream=stream)
    assert isinstance(parked, Parked)
    t3, t1 = (queue.get(r) for r in parked.request_ids)
    assert (t3.call.args, t1.call.args) == ({"id": "t3"}, {"id": "t1"})
    assert t3.call.framework == FRAMEWORK
    assert t3.call.call_id == "call_t3"
    assert t3.call.agent == "Triage agent"
    assert t3.call.run == "seed"
    assert t3.args_schema is not None
    assert t3.args_schema["properties"]["id"]["type"] == "string"
    assert set(t3.allowed_decisions) == set(DecisionKind)
    assert tickets.ids() == ["t1", "t2", "t3"], "both tickets exist while the run is parked"
    assert tickets.delete_runs() == 0

    queue.decide(t3.id, Approve(), reviewer="ann")
    queue.decide(t1.id, Reject(message=REJECTION), reviewer="ann")
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)

    assert isinstance(done, Finished)
    assert done.result.final_output == "Deleted the spam."
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    assert tickets.delete_runs("t1") == 0
    assert outputs_by_call(model.inputs[-1:]) == {"call_t3": "deleted ticket t3", "call_t1": REJECTION}
    assert queue.get(t3.id).status is RequestStatus.APPLIED
    assert queue.get(t1.id).status is RequestStatus.REJECTED
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED
    ran = {e.request_id: e.kind for e in queue.events() if e.kind in ("ran", "not_run")}
    assert ran == {t3.id: "ran", t1.id: "not_run"}
    assert queue.verify_audit().ok


async def test_resubmitting_a_call_finds_its_decided_request(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, model = parallel_agent(tickets, "t3")
    first = await Gate(queue).run(agent, "go", run="same-run")
    assert isinstance(first, Parked)
    queue.decide(first.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    # The same call in the same run maps to the same request id: its decision applies, nobody is asked again.
    again = await Gate(queue).run(agent, "go", run="same-run")
    assert isinstance(again, Finished)
    assert [r.id for r in queue.list_requests().items] == list(first.request_ids)
    assert tickets.delete_runs() == 0
    assert tool_results(model.inputs) == [REJECTION]


@STREAM
async def test_one_call_per_turn_parks_again_after_the_first_decision(
    queue: ReviewQueue, tickets: TicketStore, stream: bool
) -> None:
    agent, model = one_by_one_agent(tickets, "t3", "t1")
    gate = Gate(queue, sdk_agent=agent)
    first = await gate.run(agent, "Delete the spam tickets.", stream=stream)
    assert isinstance(first, Parked)
    queue.decide(first.request_ids[0], Approve(), reviewer="ann")
    second = await gate.resume(first.parked_run, stream=stream)
    assert isinstance(second, Parked)
    assert second.parked_run != first.parked_run
    assert second.run == first.run
    assert queue.get(second.request_ids[0]).call.args == {"id": "t1"}
    assert tickets.ids() == ["t1", "t2"]
    assert queue.get_parked(first.parked_run).outcome == f"parked again as {second.parked_run}"
    queue.decide(second.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    done = await gate.resume(second.parked_run, stream=stream)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert tool_results(model.inputs) == ["deleted ticket t3", REJECTION]


async def test_a_partly_decided_run_stays_parked_and_unclaimed(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = parallel_agent(tickets, "t3", "t1")
    gate = Gate(queue, sdk_agent=agent)
    parked = await gate.run(agent, "go")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    still = await gate.resume(parked.parked_run)
    assert still == parked
    stored = queue.get_parked(parked.parked_run)
    assert stored.status is ParkedRunStatus.PARKED
    assert stored.attempts == 0
    assert tickets.delete_runs() == 0, "nothing runs while a request of the run is pending"
    queue.decide(parked.request_ids[1], Reject(message=REJECTION), reviewer="ann")
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert tickets.ids() == ["t1", "t2"]


async def test_inline_wait_answers_without_parking(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, model = parallel_agent(tickets, "t3")

    async def reviewer() -> None:
        while not (pending := queue.pending()):  # noqa: ASYNC110 - a reviewer polling the queue
            await asyncio.sleep(0.01)
        queue.decide(pending[0].id, Approve(), reviewer="ann")

    task = asyncio.create_task(reviewer())
    outcome = await Gate(queue).run(agent, "go", wait=10.0)
    await task
    assert isinstance(outcome, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []
    assert tool_results(model.inputs) == ["deleted ticket t3"]


async def test_inline_wait_that_runs_out_parks(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = parallel_agent(tickets, "t3")
    outcome = await Gate(queue).run(agent, "go", wait=0.1)
    assert isinstance(outcome, Parked)
    assert queue.get(outcome.request_ids[0]).is_open
    assert tickets.delete_runs() == 0


@STREAM
async def test_edit_runs_the_edited_arguments(queue: ReviewQueue, tickets: TicketStore, stream: bool) -> None:
    agent, model = parallel_agent(tickets, "t3")
    parked = await Gate(queue).run(agent, "go", stream=stream)
    request_id = parked.request_ids[0]  # type: ignore[union-attr]
    with pytest.raises(InvalidArgumentsError):
        queue.decide(request_id, Edit(args={"id": 2}), reviewer="ann")  # the tool's schema says string
    assert queue.get(request_id).is_open
    queue.decide(request_id, Edit(args={"id": "t2"}), reviewer="ann")
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)  # type: ignore[union-attr]
    assert isinstance(done, Finished)
    assert tickets.ids() == ["t1", "t3"]
    assert (tickets.delete_runs("t2"), tickets.delete_runs("t3")) == (1, 0)
    assert tool_results(model.inputs) == ["deleted ticket t2"]
    decided = next(e for e in queue.events(request_id=request_id) if e.kind == "decided")
    assert decided.payload["diff"]["changed"] == {"id": ["t3", "t2"]}


@STREAM
async def test_respond_returns_the_content_and_runs_nothing(
    queue: ReviewQueue, tickets: TicketStore, stream: bool
) -> None:
    agent, model = parallel_agent(tickets, "t3")
    parked = await Gate(queue).run(agent, "go", stream=stream)
    content = "Ticket t3 was archived by hand instead; nothing else to do."
    queue.decide(parked.request_ids[0], Respond(content=content), reviewer="ann")  # type: ignore[union-attr]
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)  # type: ignore[union-attr]
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0
    assert tool_results(model.inputs) == [content]
    assert queue.get(parked.request_ids[0]).status is RequestStatus.ANSWERED  # type: ignore[union-attr]


async def test_remember_auto_approves_matching_calls_in_later_runs(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = parallel_agent(tickets, "t3")
    gate = Gate(queue, sdk_agent=agent)
    parked = await gate.run(agent, "go", run="first")
    remember = Remember(match=RememberMatch.PATTERN, arg_patterns={"id": "t[23]"})
    queue.decide(parked.request_ids[0], Approve(remember=remember), reviewer="ann")  # type: ignore[union-attr]
    await gate.resume(parked.parked_run)  # type: ignore[union-attr]
    [rule] = queue.rules()
    assert rule.tool == TOOL

    matching, matching_model = parallel_agent(tickets, "t2")
    outcome = await Gate(queue).run(matching, "go", run="second")
    assert isinstance(outcome, Finished), "a call the standing rule covers runs without a request"
    assert tickets.ids() == ["t1"]
    assert tool_results(matching_model.inputs) == ["deleted ticket t2"]
    allowed = [e for e in queue.events() if e.kind == "auto_allowed"]
    assert [(e.run, e.payload["args"], e.payload["rule"]) for e in allowed] == [("second", {"id": "t2"}, rule.id)]

    other, _ = parallel_agent(tickets, "t1")
    asked = await Gate(queue).run(other, "go", run="third")
    assert isinstance(asked, Parked), "a call the rule does not cover still asks"
    assert tickets.ids() == ["t1"]


async def test_the_sdk_sticky_approval_is_never_used(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = one_by_one_agent(tickets, "t3", "t1")
    gate = Gate(queue, sdk_agent=agent)
    parked = await gate.run(agent, "go")
    queue.decide(parked.request_ids[0], Approve(remember=Remember(match=RememberMatch.EXACT)), reviewer="ann")  # type: ignore[union-attr]
    again = await gate.resume(parked.parked_run)  # type: ignore[union-attr]
    # An exact standing rule covers t3 only; the SDK's always_approve would have let t1 through.
    assert isinstance(again, Parked)
    assert tickets.ids() == ["t1", "t2"]
    state = queue.get_parked(again.parked_run).state
    assert '"sticky_scope"' not in state


async def test_a_deny_verdict_never_runs_and_never_asks(make_queue: Any, tickets: TicketStore) -> None:
    reason = "Policy: t1 is protected. Tell the user it cannot be deleted."
    protect = PolicyRule(
        name="protect-t1",
        verdict=VerdictKind.DENY,
        tool=TOOL,
        where=({"arg": "id", "kind": "equals", "value": "t1"},),
        reason=reason,
    )
    queue = make_queue(Policy(rules=(protect, ASK_DELETES)))
    agent, model = parallel_agent(tickets, "t1")
    outcome = await Gate(queue).run(agent, "go")
    assert isinstance(outcome, Finished)
    assert queue.pending() == []
    assert tickets.delete_runs() == 0
    [told] = tool_results(model.inputs)
    assert reason in told
    assert [e.kind for e in queue.events()].count("auto_denied") == 1


async def test_an_allowed_call_runs_without_a_request(make_queue: Any, tickets: TicketStore) -> None:
    queue = make_queue(Policy(default=VerdictKind.ALLOW))
    agent, _ = parallel_agent(tickets, "t3")
    outcome = await Gate(queue).run(agent, "go", run="allowed")
    assert isinstance(outcome, Finished)
    assert tickets.ids() == ["t1", "t2"]
    assert queue.list_requests().items == []
    executed = [e for e in queue.events() if e.kind in ("ran", "not_run")]
    assert [(e.run, e.payload["ran"], e.payload["result"]) for e in executed] == [
        ("allowed", True, "deleted ticket t3")
    ]


@pytest.mark.parametrize("kind", ["mapping", "object"])
async def test_the_run_context_reaches_the_tool_after_a_resume(queue: ReviewQueue, kind: str) -> None:
    seen: list[str] = []

    @function_tool(name_override=TOOL)
    def delete_ticket(ctx: RunContextWrapper[Any], id: str) -> str:
        """Delete a ticket by id."""
        user = ctx.context["user"] if isinstance(ctx.context, dict) else ctx.context.user
        seen.append(user)
        return f"deleted ticket {id} for {user}"

    agent = Agent(name="Triage agent", tools=[delete_ticket], model=PlannedModel([[delete_call("t3")]]))
    context: Any = {"user": "ann"} if kind == "mapping" else SimpleNamespace(user="ann")
    parked = await Gate(queue).run(agent, "go", context=context)
    queue.decide(parked.request_ids[0], Approve(), reviewer="bob")  # type: ignore[union-attr]
    # A JSON mapping travels inside the stored state; any other object is handed to resume again.
    again = None if kind == "mapping" else SimpleNamespace(user="ann")
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, context=again)  # type: ignore[union-attr]
    assert isinstance(done, Finished)
    assert seen == ["ann"]

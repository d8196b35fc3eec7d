"""Failure paths: each fails closed with a clear error, runs nothing, and leaves stored state as it was."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, LocalShellTool, Runner, RunState
from agents.tool_context import ToolContext

from crossgate import (
    Approve,
    ConfigurationError,
    FingerprintMismatchError,
    NotFoundError,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    RequestStatus,
    ReviewQueue,
    fingerprint,
)
from crossgate.model import EXPIRY_MESSAGE
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from crossgate_openai._scope import RunScope, run_scope
from tests.adapters.openai.conftest import ASK_DELETES
from tests.adapters.openai.scripted import Call, PlannedModel, delete_call, plain, ticket_agent, tool_results
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore


def agent_for(tickets: TicketStore, *calls: Call) -> tuple[Agent[Any], PlannedModel]:
    model = PlannedModel([list(calls)], final="Done.")
    return ticket_agent(tickets, model), model


async def parked_t3(queue: ReviewQueue, tickets: TicketStore, run: str = "r") -> tuple[Agent[Any], Parked]:
    agent, _ = agent_for(tickets, delete_call("t3"))
    parked = await Gate(queue).run(agent, "go", run=run)
    assert isinstance(parked, Parked)
    return agent, parked


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('{"id": "t3"', "not valid JSON"),
        ('["t3"]', "must be a JSON object"),
        ("", "empty"),
        ('{"id": NaN}', "NaN"),
        ("{}", "schema"),
        ('{"id": 3}', "schema"),
        ('{"id": "t3", "force": true}', "schema"),
    ],
    ids=["truncated", "array", "empty", "nan", "missing-id", "wrong-type", "extra-key"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
async def test_malformed_arguments_run_nothing_and_tell_the_model(
    queue: ReviewQueue, tickets: TicketStore, raw: str, why: str, stream: bool
) -> None:
    agent, model = agent_for(tickets, Call(TOOL, raw, "call_bad"))
    outcome = await Gate(queue).run(agent, "go", run="bad", stream=stream)
    assert isinstance(outcome, Finished), "no person is asked about arguments nobody can inspect"
    assert tickets.delete_runs() == 0
    assert queue.list_requests().items == []
    [told] = tool_results(model.inputs)
    assert told.startswith("crossgate did not run delete_ticket: ")
    assert why in told
    assert "Nothing was executed" in told
    [event] = [e for e in queue.events() if e.kind in ("ran", "not_run")]
    assert event.payload["ran"] is False
    assert event.run == "bad"


async def test_an_expired_request_answers_as_a_rejection(make_queue: Any, tickets: TicketStore) -> None:
    queue = make_queue(Policy(rules=(ASK_DELETES.model_copy(update={"timeout_seconds": 0.2}),)))
    agent, parked = await parked_t3(queue, tickets)
    await asyncio.sleep(0.3)
    agent, model = agent_for(tickets, delete_call("t3"))
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert queue.get(parked.request_ids[0]).status is RequestStatus.EXPIRED
    assert tickets.delete_runs() == 0
    assert tool_results(model.inputs) == [EXPIRY_MESSAGE]
    [executed] = [e for e in queue.events(request_id=parked.request_ids[0]) if e.kind in ("ran", "not_run")]
    assert executed.payload == {"ran": False, "result": EXPIRY_MESSAGE, "error": None}


async def test_an_unknown_parked_run_is_not_found(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = agent_for(tickets, delete_call("t3"))
    with pytest.raises(NotFoundError, match="park_nope"):
        await Gate(queue, sdk_agent=agent).resume("park_nope")
    assert tickets.delete_runs() == 0


async def test_a_second_resume_is_refused_and_runs_nothing(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, parked = await parked_t3(queue, tickets)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    gate = Gate(queue, sdk_agent=agent)
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    with pytest.raises(ParkedRunClaimedError, match="resumed once"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert tickets.delete_runs("t3") == 1


async def test_concurrent_resumes_run_the_tool_once(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, parked = await parked_t3(queue, tickets)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    outcomes = await asyncio.gather(
        Gate(queue, sdk_agent=agent).resume(parked.parked_run),
        Gate(queue, sdk_agent=agent).resume(parked.parked_run),
        return_exceptions=True,
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["Finished", "ParkedRunClaimedError"]
    assert tickets.delete_runs("t3") == 1


async def test_a_replayed_sdk_state_cannot_run_an_applied_call_again(queue: ReviewQueue, tickets: TicketStore) -> None:
    """The SDK runs an approved call again from a reused snapshot; the gated tool refuses the second time."""
    agent, parked = await parked_t3(queue, tickets, run="replay")
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    saved = queue.get_parked(parked.parked_run).state
    replay_agent, model = agent_for(tickets, delete_call("t3"))
    Gate(queue).install(replay_agent)
    state = await RunState.from_string(replay_agent, saved)
    state.approve(state.get_interruptions()[0])
    with run_scope(RunScope("replay")):
        await Runner.run(replay_agent, state)
    assert tickets.delete_runs("t3") == 1
    [told] = tool_results(model.inputs)
    # The model learns the call ran the first time, with its recorded result, so it neither retries it
    # nor believes it failed.
    assert told.startswith("delete_ticket already ran for this call")
    assert told.endswith("it was not run again. Its result was: deleted ticket t3")
    with run_scope(RunScope("replay")):  # a third replay: still the first application's outcome
        await Runner.run(replay_agent, await _approved(replay_agent, saved))
    assert tool_results(model.inputs)[-1] == told
    assert tickets.delete_runs("t3") == 1


async def _approved(agent: Agent[Any], saved: str) -> RunState[Any, Any]:
    state = await RunState.from_string(agent, saved)
    state.approve(state.get_interruptions()[0])
    return state


async def test_a_decision_for_other_arguments_is_refused(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, parked = await parked_t3(queue, tickets)
    request_id = parked.request_ids[0]
    before = len(queue.events())
    with pytest.raises(FingerprintMismatchError):
        queue.decide(request_id, Approve(fingerprint=fingerprint(TOOL, {"id": "t1"})), reviewer="ann")
    assert queue.get(request_id).status is RequestStatus.PENDING
    assert len(queue.events()) == before
    still = await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert still == parked
    assert tickets.delete_runs() == 0


async def test_the_gated_tool_runs_only_the_reviewed_arguments(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, parked = await parked_t3(queue, tickets, run="bound")
    request_id = parked.request_ids[0]
    queue.decide(request_id, Approve(), reviewer="ann")
    gated = agent.tools[0]
    raw = '{"id": "t1"}'
    context = ToolContext(context=None, tool_name=TOOL, tool_call_id="call_t3", tool_arguments=raw)
    with run_scope(RunScope("bound")):
        told = await gated.on_invoke_tool(context, raw)  # type: ignore[union-attr]
    assert "reviewed for other arguments" in told
    assert tickets.delete_runs() == 0
    assert queue.get(request_id).status is RequestStatus.DECIDED, "the approval is still unused"


async def test_native_approval_outside_the_gate_runs_nothing(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, model = agent_for(tickets, delete_call("t3"))
    Gate(queue).install(agent)
    paused = await Runner.run(agent, "go")
    state = paused.to_state()
    state.approve(state.get_interruptions()[0])
    await Runner.run(agent, state)
    assert tickets.delete_runs() == 0
    [told] = tool_results(model.inputs)
    assert "was not started through crossgate's Gate" in told
    [request] = queue.list_requests().items
    assert request.status is RequestStatus.CANCELLED


async def test_resume_with_another_agent_graph_is_refused_before_claiming(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    _, parked = await parked_t3(queue, tickets)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match="started at agent 'Triage agent'"):
        await Gate(queue).resume(parked.parked_run, sdk_agent=Agent(name="Someone else"))
    with pytest.raises(ConfigurationError, match="needs the agent graph"):
        await Gate(queue).resume(parked.parked_run)
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED
    agent, _ = agent_for(tickets, delete_call("t3"))
    assert isinstance(await Gate(queue, sdk_agent=agent).resume(parked.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


def test_tools_crossgate_cannot_gate_are_refused(queue: ReviewQueue) -> None:
    agent: Agent[Any] = Agent(name="shell", tools=[LocalShellTool(executor=lambda request: "")])
    with pytest.raises(ConfigurationError, match="gates function tools only"):
        Gate(queue).install(agent)


def test_install_leaves_the_users_tools_untouched(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = agent_for(tickets, delete_call("t3"))
    original = agent.tools[0]
    invoker = original.on_invoke_tool  # type: ignore[union-attr]
    Gate(queue).install(agent)
    Gate(queue).install(agent)
    assert agent.tools[0] is not original
    assert original.on_invoke_tool is invoker  # type: ignore[union-attr]
    assert original.needs_approval is False  # type: ignore[union-attr]
    assert type(agent.tools[0].on_invoke_tool).__name__ == "GatedInvoker"  # type: ignore[union-attr]


async def test_a_resume_that_crashed_after_applying_never_runs_the_call_again(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    agent, parked = await parked_t3(queue, tickets, run="crash")
    request_id = parked.request_ids[0]
    queue.decide(request_id, Approve(), reviewer="ann")
    # A resumer claimed the run, marked the call applied, ran the delete, and died before finishing.
    # The lease is long enough that a loaded machine still tries the first resume inside it.
    queue.claim_parked(parked.parked_run, owner="crashed-worker", lease_seconds=1.0)
    queue.mark_applied(request_id, args={"id": "t3"})
    tickets.delete("t3")
    with pytest.raises(ParkedRunClaimedError, match="crashed-worker"):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    await asyncio.sleep(1.1)
    agent, model = agent_for(tickets, delete_call("t3"))
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run)  # the lease ran out: another resumer takes it
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1
    [told] = tool_results(model.inputs)
    # The crashed resumer recorded no outcome: the model is told it may have taken effect, not to retry.
    assert "was applied before, but no outcome was recorded" in told
    assert "Do not retry it" in told
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED


async def test_a_call_id_reused_for_other_arguments_is_refused(queue: ReviewQueue, tickets: TicketStore) -> None:
    await parked_t3(queue, tickets, run="reuse")
    agent, model = agent_for(tickets, Call(TOOL, '{"id": "t1"}', "call_t3"))
    outcome = await Gate(queue).run(agent, "go", run="reuse")
    assert isinstance(outcome, Finished)
    assert tickets.delete_runs() == 0
    [told] = tool_results(model.inputs)
    assert "exists for other arguments" in told
    assert len(queue.list_requests().items) == 1


async def test_a_state_that_cannot_be_saved_leaves_no_request_behind(
    queue: ReviewQueue, tickets: TicketStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The requests of a pause are stored with its parked run, in one transaction: a reviewer never
    # sees a request whose run could not be parked (and so could never be resumed).
    def refuse(self: RunState[Any, Any]) -> str:
        raise RuntimeError("the state cannot be serialised")

    monkeypatch.setattr(RunState, "to_string", refuse)
    agent, _ = agent_for(tickets, delete_call("t3"), delete_call("t1"))
    with pytest.raises(RuntimeError, match="cannot be serialised"):
        await Gate(queue).run(agent, "go", run="r")
    assert queue.list_requests().items == []
    assert queue.parked_runs() == []
    assert [e.kind for e in queue.events()] == []
    assert tickets.delete_runs() == 0


async def test_every_request_of_a_pause_arrives_with_its_parked_run(queue: ReviewQueue, tickets: TicketStore) -> None:
    agent, _ = agent_for(tickets, delete_call("t3"), delete_call("t1"))
    parked = await Gate(queue).run(agent, "go", run="r")
    assert isinstance(parked, Parked)
    kinds = [(e.kind, e.request_id) for e in queue.events()]
    assert kinds == [("submitted", r) for r in parked.request_ids] + [("run_parked", None)]
    assert {r.id for r in queue.pending()} == set(parked.request_ids)


class ModelDownOnce(PlannedModel):
    """The model API fails once after the tool ran (a resume that fails part-way), then answers."""

    def __init__(self, *calls: Call) -> None:
        super().__init__([list(calls)], final="Done.")
        self.failures = 1

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        items = kwargs["input"] if isinstance(kwargs["input"], list) else []
        answered = any(plain(i).get("type") == "function_call_output" for i in items)
        if answered and self.failures:
            self.failures -= 1
            raise ConnectionError("the model API is down")
        return await super().get_response(*args, **kwargs)


async def test_a_failed_resume_can_be_retried_and_runs_nothing_twice(queue: ReviewQueue, tickets: TicketStore) -> None:
    model = ModelDownOnce(delete_call("t3"))
    agent = ticket_agent(tickets, model)
    parked = await Gate(queue).run(agent, "go", run="flaky")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConnectionError):
        await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    failed = queue.get_parked(parked.parked_run)
    assert failed.status is ParkedRunStatus.FAILED and "the model API is down" in (failed.outcome or "")
    assert tickets.delete_runs("t3") == 1
    assert queue.ready_runs() == []  # a failed run is not picked up by itself

    queue.retry_parked(parked.parked_run, actor="ops")
    assert [p.id for p in queue.ready_runs()] == [parked.parked_run]
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run)
    assert isinstance(done, Finished) and done.result.final_output == "Done."
    assert tickets.delete_runs("t3") == 1  # the retry restored the state from before the tool, and did not run it
    told = tool_results(model.inputs)[-1]
    assert told.startswith("delete_ticket already ran for this call")
    assert told.endswith("Its result was: deleted ticket t3")
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED

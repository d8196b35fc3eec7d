"""``requested_by``: the person a session acts for cannot approve its calls, deferred or held, in any resume.

Through the SDK's real client against the in-process CLI double; the real CLI runs the same scenario in
``AdapterContract`` (tests/adapters/claude/test_contract.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

from crossgate import (
    ApprovalRequest,
    Approve,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    ReviewQueue,
)
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from crossgate_claude.testing import agent_call
from tests.adapters.claude.fake_cli import World
from tests.conformance.tickets import TicketStore
from tests.support.decisions import refuse_self_approval

REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."


def calls(*ids: str) -> str:
    return "\n".join(f"CALL delete_ticket {json.dumps({'id': i})}" for i in ids)


def approve_held_call(queue: ReviewQueue) -> asyncio.Task[ApprovalRequest]:
    """A reviewer for a call held inline: pat's own approval is refused, then ann approves."""

    async def review() -> ApprovalRequest:
        while not (pending := queue.pending()):  # noqa: ASYNC110 - a reviewer polling the queue
            await asyncio.sleep(0.005)
        [request] = pending
        refuse_self_approval(queue, request.id, "pat")
        queue.decide(request.id, Approve(), reviewer="ann")
        return request

    return asyncio.ensure_future(review())


async def test_a_deferred_call_and_the_calls_of_later_resumes_carry_it(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, resume_timeout=2.0)
    first = await gate.run(calls("t3", "t1"), requested_by="pat")
    assert isinstance(first, Parked)
    [t3] = first.request_ids
    assert queue.get(t3).requested_by == "pat"
    assert queue.get_parked(first.parked_run).metadata["requested_by"] == "pat"

    refuse_self_approval(queue, t3, "pat")
    still = await gate.resume(first.parked_run)
    assert still == Parked(first.run, first.parked_run, first.request_ids)
    assert queue.get_parked(first.parked_run).status is ParkedRunStatus.PARKED
    assert world.ran == []

    queue.decide(t3, Approve(), reviewer="ann")
    # A fresh gate: who the run acts for comes from the parked run in the store.
    second = await Gate(queue, options=fake_options, transport=world.transport, resume_timeout=2.0).resume(
        first.parked_run
    )
    assert isinstance(second, Parked)
    [t1] = second.request_ids
    assert queue.get(t1).call.args == {"id": "t1"}
    assert queue.get(t1).requested_by == "pat", "the call after the resume carries the run's person too"
    assert queue.get_parked(second.parked_run).metadata["requested_by"] == "pat"
    assert tickets.delete_runs("t3") == 1

    refuse_self_approval(queue, t1, "pat")
    queue.decide(t1, Reject(message=REJECTION), reviewer="ann")
    done = await gate.resume(second.parked_run)
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 1
    assert [str(b["content"]) for b in world.told.values()] == ["deleted ticket t3", REJECTION]


@pytest.mark.parametrize(
    "settings",
    [{"hold": 5.0}, {"defer": False, "hold": None}],
    ids=["held-in-the-hook", "held-in-can_use_tool"],
)
async def test_a_call_held_inline_carries_it(
    queue: ReviewQueue,
    world: World,
    fake_options: ClaudeAgentOptions,
    tickets: TicketStore,
    settings: dict[str, Any],
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, **settings)
    review = approve_held_call(queue)
    done = await gate.run(calls("t3"), requested_by="pat")
    request = await review
    assert request.requested_by == "pat"
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1
    assert queue.get(request.id).status is RequestStatus.APPLIED


async def test_a_subagents_held_call_carries_it(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, subagent_hold=5.0)
    review = approve_held_call(queue)
    done = await gate.run(agent_call("ticket-cleaner", ("delete_ticket", {"id": "t3"})), requested_by="pat")
    request = await review
    assert (request.call.agent, request.requested_by) == ("ticket-cleaner", "pat")
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1


async def test_own_client_with_options_for_a_person(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, resume_timeout=2.0)
    options = gate.options(fake_options, requested_by="pat")
    async with ClaudeSDKClient(options, transport=world.transport(options)) as client:
        await client.query(calls("t3"))
        messages = [message async for message in client.receive_response()]
    assert isinstance(messages[-1], ResultMessage)
    outcome = gate.outcome(messages[-1])
    assert isinstance(outcome, Parked)
    [rid] = outcome.request_ids
    assert queue.get(rid).requested_by == "pat"
    refuse_self_approval(queue, rid, "pat")
    queue.decide(rid, Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


async def test_a_run_without_it_lets_anyone_decide(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, resume_timeout=2.0)
    outcome = await gate.run(calls("t3"))
    assert isinstance(outcome, Parked)
    assert queue.get(outcome.request_ids[0]).requested_by is None
    queue.decide(outcome.request_ids[0], Approve(), reviewer="pat")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


def test_resume_takes_no_requested_by() -> None:
    import inspect

    assert "requested_by" in inspect.signature(Gate.run).parameters
    assert "requested_by" in inspect.signature(Gate.options).parameters
    assert "requested_by" not in inspect.signature(Gate.resume).parameters

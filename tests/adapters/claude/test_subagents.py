"""Subagents through the in-process CLI double: naming, the hook-to-can_use_tool mapping, inline holds.

The double runs an ``Agent`` call's subagent in the foreground with the inputs the real CLI sends
(``agent_id`` and ``agent_type`` to hooks, only ``agent_id`` to ``can_use_tool``) and drops a call
deferred inside it; ``test_real_cli_subagents.py`` covers the same paths against the real CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    ToolPermissionContext,
    ToolResultBlock,
    UserMessage,
)

from crossgate import (
    ApprovalRequest,
    Approve,
    ParkedRunStatus,
    Reject,
    Remember,
    RememberMatch,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.decisions import AnyDecision
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate, request_id
from crossgate_claude import _turns as turns
from crossgate_claude._agents import UNKNOWN_AGENT
from crossgate_claude._callbacks import HELD_TOO_LONG, HOLD_GRACE_SECONDS, SESSION_ENDED
from crossgate_claude._turns import RunTracker, read_run
from crossgate_claude.testing import agent_call
from tests.adapters.claude.conftest import PROTECTED
from tests.adapters.claude.fake_cli import NO_OUTPUT, World
from tests.conformance.tickets import TicketStore

CLEANER = "ticket-cleaner"
MAIN = "support-desk"
REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."
DELETE = "mcp__tickets__delete_ticket"


@pytest.fixture
def gate(queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions) -> Gate:
    """A deferring gate (hold 0) on the double; calls it may not defer wait up to 5 s."""
    return Gate(queue, options=fake_options, transport=world.transport, agent=MAIN, subagent_hold=5.0)


def reviewer(
    queue: ReviewQueue, decide: Callable[[ApprovalRequest], AnyDecision]
) -> asyncio.Task[list[ApprovalRequest]]:
    """Decides every request as it turns up, until cancelled; returns the requests it saw."""

    async def watch() -> list[ApprovalRequest]:
        seen: list[ApprovalRequest] = []
        try:
            while True:
                for request in queue.pending():
                    seen.append(request)
                    queue.decide(request.id, decide(request), reviewer="ann")
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            return seen

    return asyncio.ensure_future(watch())


async def stop(watching: asyncio.Task[list[ApprovalRequest]]) -> list[ApprovalRequest]:
    watching.cancel()
    return await watching


def told(world: World) -> list[tuple[bool, str]]:
    return [(bool(b["is_error"]), str(b["content"])) for b in world.told.values()]


# Through the double -------------------------------------------------------------------------------
async def test_a_subagents_call_is_named_by_its_type_held_inline_and_run_once(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    watching = reviewer(queue, lambda request: Approve())
    done = await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "t3"})))
    [request] = await stop(watching)
    assert isinstance(done, Finished)  # not deferred: the CLI would drop the call
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []
    [agent] = world.subagents
    assert (request.call.agent, request.call.context["agent_id"]) == (CLEANER, agent.agent_id)
    assert request.call.run == done.run
    assert world.permission_agents == [None, agent.agent_id]  # the Agent call, then the subagent's delete
    assert tickets.delete_runs("t3") == 1
    assert queue.get(request.id).status is RequestStatus.APPLIED
    assert told(world) == [(False, "deleted ticket t3"), (False, "All requested tool calls were answered.")]


async def test_a_rejected_subagent_call_runs_nothing_and_the_subagent_reads_the_message(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    watching = reviewer(queue, lambda request: Reject(message=REJECTION))
    done = await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "t1"})))
    [request] = await stop(watching)
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0
    assert world.ran == []
    assert told(world)[0] == (True, REJECTION)
    [executed] = [e.payload for e in queue.events(request_id=request.id) if e.kind in ("ran", "not_run")]
    assert (executed["ran"], executed["result"]) == (False, REJECTION)


async def test_an_unanswered_subagent_call_is_cancelled_after_subagent_hold(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, subagent_hold=0.05)
    done = await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    [request] = queue.list_requests().items
    assert request.status is RequestStatus.CANCELLED
    assert request.closed_reason == HELD_TOO_LONG.format(seconds=0.05)
    assert tickets.delete_runs() == 0
    assert told(world)[0] == (True, HELD_TOO_LONG.format(seconds=0.05))
    # Had this process died mid-hold, the request would have expired on its own soon after.
    assert request.expires_at is not None
    assert (request.expires_at - request.created_at).total_seconds() == pytest.approx(0.05 + HOLD_GRACE_SECONDS)


async def test_a_policy_deny_inside_a_subagent_never_asks(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    done = await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "prod-1"})))
    assert isinstance(done, Finished)
    assert queue.list_requests().items == []
    assert len(world.permission_asks) == 1  # only the Agent call itself
    assert told(world)[0] == (True, f"PreToolUse:{DELETE} hook error: {PROTECTED}")
    [denied] = [e.payload for e in queue.events() if e.kind == "auto_denied"]
    assert (denied["args"], denied["agent"]) == ({"id": "prod-1"}, CLEANER)
    assert tickets.delete_runs() == 0


async def test_a_rule_for_the_subagent_covers_its_next_invocation_and_not_the_main_agent(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    for_the_agent = Remember(this_agent_only=True, match=RememberMatch.TOOL)
    watching = reviewer(queue, lambda request: Approve(remember=for_the_agent))
    assert isinstance(await gate.run(agent_call(CLEANER, ("delete_ticket", {"id": "t3"}))), Finished)
    await stop(watching)
    [rule] = queue.rules()
    assert (rule.agent, rule.effect) == (CLEANER, VerdictKind.ALLOW)

    script = "\n".join([agent_call(CLEANER, ("delete_ticket", {"id": "t2"})), 'CALL delete_ticket {"id": "t1"}'])
    outcome = await gate.run(script)
    first, second = world.subagents
    assert first.agent_id != second.agent_id
    # The CLI still asks can_use_tool (it has no allow rule); crossgate answers from the standing rule,
    # under the name the hook gave the call: naming it by agent_id would have asked a reviewer.
    assert world.permission_agents[-1] == second.agent_id
    assert tickets.delete_runs("t2") == 1
    assert isinstance(outcome, Parked)  # the main agent's delete: asked, and deferred as usual
    [pending] = queue.pending()
    assert (pending.call.agent, pending.call.args) == (MAIN, {"id": "t1"})
    assert len(queue.list_requests().items) == 2


# The callbacks on their own -----------------------------------------------------------------------
Hook = Callable[[dict[str, Any], str | None, Any], Any]


def callbacks(gate: Gate) -> tuple[dict[str, Hook], Any]:
    """The crossgate hooks of one options object by event, and its can_use_tool."""
    options = gate.options()
    hooks = {event: matchers[-1].hooks[0] for event, matchers in (options.hooks or {}).items()}
    hooks["PreToolUse"] = (options.hooks or {})["PreToolUse"][0].hooks[0]
    return hooks, options.can_use_tool  # type: ignore[return-value]


def pre_input(
    tool_use_id: str, *, agent_id: str | None = None, agent_type: str | None = None, tool: str = DELETE
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"id": "t3"},
        "tool_use_id": tool_use_id,
    }
    if tool.startswith("mcp__"):
        data["mcp_server"] = {"name": "tickets", "source": "sdk"}  # as the CLI reports an MCP tool's server
    if agent_id:
        data["agent_id"] = agent_id
    if agent_type:
        data["agent_type"] = agent_type
    return data


def decision(output: dict[str, Any]) -> str:
    return str(output["hookSpecificOutput"]["permissionDecision"])


async def test_can_use_tool_names_the_call_as_the_hook_did_and_refuses_an_unknown_agent(queue: ReviewQueue) -> None:
    hooks, can_use_tool = callbacks(Gate(queue, agent=MAIN, subagent_hold=5.0))
    assert decision(await hooks["PreToolUse"](pre_input("u1", agent_id="a1", agent_type=CLEANER), "u1", {})) == "ask"
    watching = reviewer(queue, lambda r: Approve())
    context = ToolPermissionContext(tool_use_id="u1", agent_id="a1")
    assert isinstance(await can_use_tool(DELETE, {"id": "t3"}, context), PermissionResultAllow)
    [request] = await stop(watching)
    assert (request.call.agent, request.call.context["agent_id"]) == (CLEANER, "a1")

    # An agent_id the hook never saw for this call, or none for a call the hook saw from a subagent.
    for context in (ToolPermissionContext(tool_use_id="u2", agent_id="a9"), ToolPermissionContext(tool_use_id="u1")):
        answer = await can_use_tool(DELETE, {"id": "t3"}, context)
        assert isinstance(answer, PermissionResultDeny)
        assert answer.message == UNKNOWN_AGENT
    assert len(queue.list_requests().items) == 1
    refused = [e.payload for e in queue.events() if e.kind in ("ran", "not_run") and e.request_id is None]
    assert [(p["ran"], p["result"], p["agent"]) for p in refused] == [(False, UNKNOWN_AGENT, None)] * 2


async def test_a_subagent_of_unknown_type_is_denied_by_the_hook(queue: ReviewQueue) -> None:
    hooks, _ = callbacks(Gate(queue, agent=MAIN))
    output = await hooks["PreToolUse"](pre_input("u1", agent_id="a1"), "u1", {})
    assert decision(output) == "deny"
    assert output["hookSpecificOutput"]["permissionDecisionReason"] == UNKNOWN_AGENT
    assert queue.list_requests().items == []
    # Once SubagentStart has said what a1 is, its calls are named by that type.
    await hooks["SubagentStart"]({"agent_id": "a1", "agent_type": CLEANER}, None, {})
    assert decision(await hooks["PreToolUse"](pre_input("u2", agent_id="a1"), "u2", {})) == "ask"


async def test_the_main_agent_defers_only_while_no_subagent_runs_or_starts(queue: ReviewQueue) -> None:
    hooks, _ = callbacks(Gate(queue, agent=MAIN))
    launch = pre_input("launch", tool="Agent")
    assert await hooks["PreToolUse"](launch, "launch", {}) == {}  # the policy allows starting a subagent
    assert decision(await hooks["PreToolUse"](pre_input("m1"), "m1", {})) == "ask"  # starting: held inline
    await hooks["SubagentStart"]({"agent_id": "a1", "agent_type": CLEANER}, None, {})
    await hooks["PostToolUse"]({"session_id": "s1", "tool_name": "Agent", "tool_input": {}}, "launch", {})
    assert decision(await hooks["PreToolUse"](pre_input("m2"), "m2", {})) == "ask"  # running in the background
    await hooks["SubagentStop"]({"agent_id": "a1", "agent_type": CLEANER}, None, {})
    assert decision(await hooks["PreToolUse"](pre_input("m3"), "m3", {})) == "defer"


async def test_a_held_call_whose_session_ends_is_cancelled_and_recorded(queue: ReviewQueue) -> None:
    hooks, can_use_tool = callbacks(Gate(queue, agent=MAIN, subagent_hold=None))
    await hooks["PreToolUse"](pre_input("u1", agent_id="a1", agent_type=CLEANER), "u1", {})
    waiting = asyncio.ensure_future(
        can_use_tool(DELETE, {"id": "t3"}, ToolPermissionContext(tool_use_id="u1", agent_id="a1"))
    )
    for _ in range(200):
        if queue.pending():
            break
        await asyncio.sleep(0.005)
    waiting.cancel()  # the CLI cancelled the request, or the client disconnected
    with pytest.raises(asyncio.CancelledError):
        await waiting
    request = queue.get(request_id("s1", "u1"))
    assert (request.status, request.closed_reason) == (RequestStatus.CANCELLED, SESSION_ENDED)
    [executed] = [e.payload for e in queue.events(request_id=request.id) if e.kind in ("ran", "not_run")]
    assert (executed["ran"], executed["result"]) == (False, SESSION_ENDED)


async def test_a_deferral_inside_a_subagent_would_lose_the_call(
    world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    # What the double copies from the CLI, and why the gate never defers there: a plain defer hook.
    async def defer_deletes(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}

    async def allow(tool: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResultAllow:
        return PermissionResultAllow()

    hooks: Any = {"PreToolUse": [HookMatcher(matcher=DELETE, hooks=[defer_deletes])]}  # type: ignore[list-item]
    options = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers, hooks=hooks, can_use_tool=allow)
    async with ClaudeSDKClient(options, transport=world.transport(options)) as client:
        await client.query(agent_call(CLEANER, ("delete_ticket", {"id": "t3"})))
        result = await read_run(client)
    assert (result.stop_reason, result.deferred_tool_use) == ("end_turn", None)
    assert told(world) == [(False, NO_OUTPUT)]
    assert world.sessions[result.session_id].deferred is None  # nothing a resume could re-ask
    assert tickets.delete_runs() == 0


# When a run is over ---------------------------------------------------------------------------------
def result(origin: dict[str, Any] | None = None, stop_reason: str = "end_turn") -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=1,
        duration_api_ms=1,
        is_error=False,
        num_turns=1,
        session_id="s1",
        stop_reason=stop_reason,
        origin=origin,  # type: ignore[arg-type]
    )


def started(task_id: str, *, background: bool) -> TaskStartedMessage:
    data = {"task_id": task_id, "run_id": f"run-{task_id}", "is_backgrounded": background}
    return TaskStartedMessage(
        subtype="task_started",
        data=data,
        task_id=task_id,
        description="",
        uuid="",
        session_id="s1",
        task_type="local_agent",
    )


def finished(task_id: str) -> TaskNotificationMessage:
    return TaskNotificationMessage(
        subtype="task_notification",
        data={},
        task_id=task_id,
        status="completed",
        output_file="",
        summary="",
        uuid="",
        session_id="s1",
    )


def test_a_run_with_a_background_subagent_ends_with_its_follow_up_turn() -> None:
    run = RunTracker()
    for message in (started("t1", background=True), result()):
        run.observe(message)
    assert not run.done  # the subagent still works after the main turn's result
    run.observe(finished("t1"))
    run.observe(result())
    assert not run.done  # the turn that result ended was not the follow-up the subagent owes
    run.observe(result({"kind": "task-notification", "runId": "run-t1"}))
    assert run.done


def test_a_subagent_that_finishes_while_the_main_turn_runs_is_told_within_that_turn() -> None:
    def tool_result(parent: str | None) -> UserMessage:
        return UserMessage(content=[ToolResultBlock(tool_use_id="u1", content="ok")], parent_tool_use_id=parent)

    run = RunTracker()
    for message in (started("t1", background=True), finished("t1"), tool_result("agent-call"), result()):
        run.observe(message)
    assert not run.done  # a subagent's own tool result says nothing about the main agent's next request
    run = RunTracker()
    for message in (started("t1", background=True), finished("t1"), tool_result(None), result()):
        run.observe(message)
    assert run.done  # the main agent's next request carried the notification; no follow-up turn comes


def test_a_foreground_subagent_owes_no_follow_up_and_a_deferral_ends_the_run() -> None:
    run = RunTracker()
    for message in (started("t1", background=False), finished("t1"), result()):
        run.observe(message)
    assert run.done
    run = RunTracker()
    for message in (started("t2", background=True), result(stop_reason="tool_deferred")):
        run.observe(message)
    assert run.done


class Stream:
    """A client whose CLI sends ``messages`` and then nothing more."""

    def __init__(self, *messages: Any) -> None:
        self.messages = messages

    async def receive_messages(self) -> AsyncIterator[Any]:
        for message in self.messages:
            yield message
        await asyncio.Event().wait()


async def test_a_follow_up_turn_that_never_begins_is_waited_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "FOLLOW_UP_WAIT", 0.05)
    last = result()
    client = Stream(started("t1", background=True), finished("t1"), last)
    assert await asyncio.wait_for(read_run(client), 2.0) is last  # type: ignore[arg-type]
    # While a subagent still runs, the wait is not bounded (it may be waiting for a reviewer).
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(read_run(Stream(started("t2", background=True), result())), 0.3)  # type: ignore[arg-type]

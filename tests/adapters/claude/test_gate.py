"""Gate through the SDK's real client and control protocol, against the in-process CLI double."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, ResultMessage

from crossgate import (
    AdapterError,
    ApprovalRequest,
    Approve,
    ConfigurationError,
    ConflictError,
    DecisionKind,
    DecisionNotAllowedError,
    Edit,
    FingerprintMismatchError,
    ParkedRunClaimedError,
    ParkedRunStatus,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
    fingerprint,
)
from crossgate.model import EXPIRY_MESSAGE
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate, ShadowedCallbackWarning, request_id
from tests.adapters.claude.conftest import DANGEROUS, PROTECTED
from tests.adapters.claude.fake_cli import World
from tests.conformance.tickets import TicketStore

REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."


def calls(*lines: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(f"CALL {name} {json.dumps(args)}" for name, args in lines)


def parked(outcome: Finished[ResultMessage] | Parked) -> Parked:
    assert isinstance(outcome, Parked), f"expected Parked, got {outcome!r}"
    return outcome


async def first_pending(queue: ReviewQueue) -> ApprovalRequest:
    """The first request to turn up pending (a reviewer watching the queue)."""
    for _ in range(500):
        if pending := queue.pending():
            return pending[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no request turned up")


def told(world: World) -> list[str]:
    return [block["content"] for block in world.told.values()]


async def test_approve_runs_the_approved_input_once(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    [rid] = outcome.request_ids
    request = queue.get(rid)
    assert request.call.tool == "delete_ticket"
    assert request.call.context["claude_tool"] == "mcp__tickets__delete_ticket"
    assert request.call.run == outcome.run
    assert request.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.EDIT, DecisionKind.REJECT)
    assert tickets.delete_runs() == 0
    assert world.ran == []
    queue.decide(rid, Approve(), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert tickets.delete_runs("t3") == 1
    assert told(world) == ["deleted ticket t3"]
    assert queue.get(rid).status is RequestStatus.APPLIED
    executed = [e for e in queue.events(request_id=rid) if e.kind in ("ran", "not_run")]
    assert executed[-1].payload["ran"] is True
    assert executed[-1].payload["error"] is None
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.RESUMED


async def test_edit_runs_the_edited_input(gate: Gate, queue: ReviewQueue, tickets: TicketStore) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    queue.decide(outcome.request_ids[0], Edit(args={"id": "t2"}), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.ids() == ["prod-1", "t1", "t3"]
    assert tickets.delete_runs("t3") == 0
    assert tickets.delete_runs("t2") == 1


async def test_reject_runs_nothing_and_the_model_reads_the_message_verbatim(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t1"}))))
    queue.decide(outcome.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs() == 0
    assert next(iter(world.told.values()))["is_error"] is True
    assert told(world) == [REJECTION]
    [executed] = [e for e in queue.events(request_id=outcome.request_ids[0]) if e.kind in ("ran", "not_run")]
    assert executed.payload["ran"] is False
    assert executed.payload["result"] == REJECTION


async def test_seed_scenario_t3_approved_t1_rejected_nothing_deleted_while_waiting(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    first = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}), ("delete_ticket", {"id": "t1"}))))
    assert tickets.ids() == ["prod-1", "t1", "t2", "t3"]
    queue.decide(first.request_ids[0], Approve(), reviewer="ann")
    second = parked(await gate.resume(first.parked_run))
    assert queue.get(second.request_ids[0]).call.args == {"id": "t1"}
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    queue.decide(second.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    assert isinstance(await gate.resume(second.parked_run), Finished)
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert told(world) == ["deleted ticket t3", REJECTION]


async def test_policy_deny_never_asks_even_under_bypass_permissions(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    options = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers, permission_mode="bypassPermissions")
    gate = Gate(queue, options=options, transport=world.transport)
    with pytest.warns(ShadowedCallbackWarning, match="bypassPermissions"):
        done = await gate.run(calls(("delete_ticket", {"id": "prod-1"}), ("Bash", {"command": "rm -rf /srv"})))
    assert isinstance(done, Finished)
    assert world.ran == []
    assert world.permission_asks == []
    assert told(world) == [
        f"PreToolUse:mcp__tickets__delete_ticket hook error: {PROTECTED}",
        f"PreToolUse:Bash hook error: {DANGEROUS}",
    ]
    assert [e.kind for e in queue.events()].count("auto_denied") == 2
    assert "prod-1" in tickets.ids()


async def test_ask_overrides_an_allowed_tools_entry(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    options = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers, allowed_tools=["mcp__tickets__delete_ticket"])
    gate = Gate(queue, options=options, transport=world.transport)
    with pytest.warns(ShadowedCallbackWarning, match="mcp__tickets__delete_ticket"):
        outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    assert tickets.delete_runs() == 0
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


def test_strict_gate_refuses_options_that_shadow_the_callback(queue: ReviewQueue) -> None:
    gate = Gate(queue, strict=True)
    with pytest.raises(ConfigurationError, match="Bash"):
        gate.options(ClaudeAgentOptions(allowed_tools=["Read(*.md)", "Bash"]))
    gate.options(ClaudeAgentOptions(allowed_tools=["Bash(git status)"]))  # a scoped entry is fine


def test_gate_settings_that_cannot_work_are_refused(queue: ReviewQueue) -> None:
    with pytest.raises(ConfigurationError, match="finite hold"):
        Gate(queue, hold=None)
    with pytest.raises(ConfigurationError, match="negative"):
        Gate(queue, hold=-1.0)
    with pytest.raises(ConfigurationError, match="hook_timeout must exceed hold"):
        Gate(queue, hold=10.0, hook_timeout=5.0)
    with pytest.raises(ConfigurationError, match="permission_prompt_tool_name"):
        Gate(queue).options(ClaudeAgentOptions(permission_prompt_tool_name="stdio"))


def test_options_install_a_blocking_hook_and_keep_the_callers_hooks(queue: ReviewQueue) -> None:
    async def own(data: object, tool_use_id: object, context: object) -> dict[str, object]:
        return {}

    gate = Gate(queue, hold=5.0)
    options = gate.options(ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[own])]}))  # type: ignore[list-item]
    assert options.can_use_tool is not None
    first, second = options.hooks["PreToolUse"]  # type: ignore[index]
    assert first.on_failure == "block"
    assert first.timeout is not None and first.timeout > 5.0
    assert second.hooks == [own]
    with pytest.raises(ConfigurationError, match="can_use_tool"):
        gate.options(options)


async def test_a_gate_refuses_to_name_the_main_agent_other_than_the_agent_the_options_run_it_as(
    queue: ReviewQueue,
) -> None:
    # Named otherwise, the rules for the agent that runs (and its remembered rules) would not apply to it.
    run_as_desk = ClaudeAgentOptions(extra_args={"agent": "desk"})
    with pytest.raises(ConfigurationError, match="Gate\\(agent='support-desk'\\) names the main agent"):
        Gate(queue, agent="support-desk").options(run_as_desk)
    with pytest.raises(ConfigurationError, match="run it as 'desk'"):
        await Gate(queue, agent="support-desk", options=run_as_desk).run("hello")
    assert Gate(queue, agent="desk").options(run_as_desk).extra_args == {"agent": "desk"}


async def test_an_allowed_call_runs_without_a_request(gate: Gate, queue: ReviewQueue, world: World) -> None:
    done = await gate.run(calls(("list_tickets", {})))
    assert isinstance(done, Finished)
    assert told(world) == ["prod-1 t1 t2 t3"]
    assert queue.pending() == []
    assert [e.kind for e in queue.events()] == ["auto_allowed"]


class BrokenStore:
    """A store whose every operation fails, as an unreachable database would."""

    def __getattr__(self, name: str) -> object:
        def fail(*args: object, **kwargs: object) -> object:
            raise ConnectionError("database unreachable")

        return fail


async def test_an_unreachable_store_denies(
    world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(ReviewQueue(BrokenStore()), options=fake_options, transport=world.transport)  # type: ignore[arg-type]
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0
    [message] = told(world)
    assert "crossgate could not reach a decision" in message
    assert "database unreachable" in message


async def test_can_use_tool_fails_closed_when_the_queue_raises(
    queue: ReviewQueue, fake_options: ClaudeAgentOptions
) -> None:
    from claude_agent_sdk import PermissionResultDeny, ToolPermissionContext

    gate = Gate(queue, options=fake_options, defer=False, hold=None)
    options = gate.options()
    assert options.can_use_tool is not None
    queue.store.get_request = lambda rid: (_ for _ in ()).throw(RuntimeError("disk on fire"))  # type: ignore[method-assign,assignment]
    answer = await options.can_use_tool(
        "mcp__tickets__delete_ticket", {"id": "t3"}, ToolPermissionContext(tool_use_id="x")
    )
    assert isinstance(answer, PermissionResultDeny)
    assert "disk on fire" in answer.message
    assert answer.interrupt is False
    # A tool of a server the options do not configure cannot be named, so it is refused too.
    unknown = await options.can_use_tool("mcp__team__ops__x", {}, ToolPermissionContext(tool_use_id="y"))
    assert isinstance(unknown, PermissionResultDeny)
    assert "cannot tell which MCP server offers the tool 'mcp__team__ops__x'" in unknown.message


async def test_expired_request_denies_with_the_expiry_message(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    quick = queue.policy.rules[2].model_copy(update={"timeout_seconds": 0.05})
    queue.policy = queue.policy.model_copy(update={"rules": (quick,)})
    gate = Gate(queue, options=fake_options, transport=world.transport)
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    await asyncio.sleep(0.1)
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert queue.get(outcome.request_ids[0]).status is RequestStatus.EXPIRED
    assert tickets.delete_runs() == 0
    assert told(world) == [EXPIRY_MESSAGE]


async def test_a_decision_for_another_fingerprint_is_refused(gate: Gate, queue: ReviewQueue) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    rid = outcome.request_ids[0]
    with pytest.raises(FingerprintMismatchError):
        queue.decide(rid, Approve(fingerprint=fingerprint("delete_ticket", {"id": "t1"})), reviewer="ann")
    assert queue.get(rid).status is RequestStatus.PENDING
    still = await gate.resume(outcome.parked_run)
    assert still == outcome
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.PARKED


async def test_a_resumed_call_with_other_input_is_denied(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    deferred = world.sessions[outcome.run].deferred
    assert deferred is not None
    deferred["input"] = {"id": "t1"}  # the transcript was tampered with while parked
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs() == 0
    assert "differs from the one the reviewer saw" in told(world)[0]


async def test_a_parked_run_is_resumed_once(gate: Gate, queue: ReviewQueue, tickets: TicketStore) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    await gate.resume(outcome.parked_run)
    with pytest.raises(ParkedRunClaimedError):
        await gate.resume(outcome.parked_run)
    assert tickets.delete_runs("t3") == 1


async def test_an_applied_decision_is_not_applied_again(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    rid = outcome.request_ids[0]
    queue.decide(rid, Approve(), reviewer="ann")
    queue.mark_applied(rid, args={"id": "t3"})  # another process already answered the CLI
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs() == 0
    # That process recorded no outcome: the model is told the call may have taken effect, not to retry.
    assert "was applied before, but no outcome was recorded" in told(world)[0]
    assert "Do not retry it" in told(world)[0]


async def test_a_call_that_ran_before_is_reported_with_its_result(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    rid = outcome.request_ids[0]
    queue.decide(rid, Approve(), reviewer="ann")
    queue.mark_applied(rid, args={"id": "t3"})  # another resumer ran it and recorded what came of it
    queue.record_outcome(rid, ran=True, result="deleted ticket t3")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs() == 0
    assert told(world)[0].endswith("it was not run again. Its result was: deleted ticket t3")


async def test_a_deferred_call_and_its_request_are_stored_together(
    gate: Gate, queue: ReviewQueue, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    kinds = [(e.kind, e.request_id) for e in queue.events() if e.kind in ("submitted", "run_parked")]
    assert kinds == [("submitted", outcome.request_ids[0]), ("run_parked", None)]

    # When the run cannot be parked, the call is denied and no request is left for a reviewer.
    def refuse(**_: Any) -> None:
        raise RuntimeError("the store refused the parked run")

    monkeypatch.setattr(queue, "park", refuse)
    denied = await gate.run(calls(("delete_ticket", {"id": "t1"})))
    assert isinstance(denied, Finished)
    assert [r.id for r in queue.list_requests().items] == [outcome.request_ids[0]]
    assert world.ran == []


async def test_a_deferred_session_is_never_prompted(gate: Gate, fake_options: ClaudeAgentOptions) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    resume_it = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers, resume=outcome.run)
    with pytest.raises(ConflictError, match="deferred call"):
        await gate.run("CALL delete_ticket {}", resume_it)


async def test_a_resume_that_is_not_re_asked_fails_bounded(gate: Gate, queue: ReviewQueue, world: World) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    world.sessions[outcome.run].deferred = None  # the CLI lost the call: a resume would wait forever
    gate.resume_timeout = 0.2
    with pytest.raises(AdapterError, match="did not re-ask"):
        await gate.resume(outcome.parked_run)
    assert queue.get_parked(outcome.parked_run).status is ParkedRunStatus.FAILED
    assert world.ran == []


async def test_run_waits_its_budget_and_resumes_here(gate: Gate, queue: ReviewQueue, tickets: TicketStore) -> None:
    async def reviewer() -> None:
        queue.decide((await first_pending(queue)).id, Approve(), reviewer="ann")

    task = asyncio.ensure_future(reviewer())
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})), wait=5.0)
    await task
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1


async def test_run_parks_when_the_budget_runs_out(gate: Gate, queue: ReviewQueue, tickets: TicketStore) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"})), wait=0.05))
    assert queue.get(outcome.request_ids[0]).is_open
    assert tickets.delete_runs() == 0


async def test_a_held_call_is_answered_inline_without_deferring(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, hold=5.0)

    async def reviewer() -> None:
        queue.decide((await first_pending(queue)).id, Edit(args={"id": "t2"}), reviewer="ann")

    task = asyncio.ensure_future(reviewer())
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})))
    await task
    assert isinstance(done, Finished)
    assert queue.parked_runs(statuses=tuple(ParkedRunStatus)) == []
    assert tickets.delete_runs("t2") == 1


async def test_inline_gate_cancels_and_denies_after_its_hold(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=fake_options, transport=world.transport, defer=False, hold=0.05)
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    [request] = queue.list_requests().items
    assert request.status is RequestStatus.CANCELLED
    assert request.call.context["display_name"] == "Delete Ticket"
    suggestions = request.call.context["suggestions"]
    assert isinstance(suggestions, list)
    assert isinstance(suggestions[0], dict)
    assert suggestions[0]["type"] == "addRules"
    assert tickets.delete_runs() == 0
    assert "No reviewer answered within 0.05 seconds" in told(world)[0]


async def test_remember_for_the_session_adds_a_session_rule(
    gate: Gate, queue: ReviewQueue, world: World, tickets: TicketStore
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}), ("delete_ticket", {"id": "t2"}))))
    session_wide = Remember(scope=RememberScope.SESSION, match=RememberMatch.TOOL)
    queue.decide(outcome.request_ids[0], Approve(remember=session_wide), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.ids() == ["prod-1", "t1"]
    [rule] = queue.rules()
    assert rule.session == outcome.run
    assert world.sessions[outcome.run].allowed == {"mcp__tickets__delete_ticket"}
    assert len(world.permission_asks) == 1  # the second delete was allowed by the session rule


async def test_respond_answers_ask_user_question_and_is_not_offered_elsewhere(
    gate: Gate, queue: ReviewQueue, world: World
) -> None:
    from crossgate import Respond

    question = {"questions": [{"question": "Which ticket?", "header": "Ticket", "options": [], "multiSelect": False}]}
    outcome = parked(await gate.run(calls(("AskUserQuestion", question), ("delete_ticket", {"id": "t3"}))))
    rid = outcome.request_ids[0]
    assert DecisionKind.RESPOND in queue.get(rid).allowed_decisions
    queue.decide(rid, Respond(content="t3, the spam one"), reviewer="ann")
    second = parked(await gate.resume(outcome.parked_run))
    assert world.ran[0] == ("AskUserQuestion", {**question, "answers": {"Which ticket?": "t3, the spam one"}})
    with pytest.raises(DecisionNotAllowedError):
        queue.decide(second.request_ids[0], Respond(content="done"), reviewer="ann")


def test_request_ids_are_deterministic_per_session_and_tool_use() -> None:
    assert request_id("s1", "toolu_1") == request_id("s1", "toolu_1")
    assert request_id("s1", "toolu_1") != request_id("s2", "toolu_1")
    assert request_id("s1", "toolu_1") != request_id("s1", "toolu_2")


def test_public_api_is_short_and_sorted() -> None:
    import crossgate_claude

    def isort_key(name: str) -> tuple[int, str]:  # constants, classes, functions: ruff's RUF022 order
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert crossgate_claude.__all__ == sorted(crossgate_claude.__all__, key=isort_key)
    assert len(crossgate_claude.__all__) <= 8
    assert Gate.framework == "claude-agent-sdk"


async def test_an_executed_input_other_than_the_approved_one_is_recorded(
    gate: Gate, queue: ReviewQueue, world: World
) -> None:
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    world.run_instead = {"id": "t1"}  # a faulty CLI that runs other input than it was allowed
    await gate.resume(outcome.parked_run)
    [executed] = [e for e in queue.events(request_id=outcome.request_ids[0]) if e.kind in ("ran", "not_run")]
    assert executed.payload["error"] == "the executed input is not the approved input"


async def test_the_worker_resumes_a_parked_session_through_the_gate(
    gate: Gate, queue: ReviewQueue, tickets: TicketStore
) -> None:
    from crossgate.runs import Resumer
    from crossgate.server.worker import Worker

    resumer: Resumer = gate
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    worker = Worker(queue, [resumer])
    assert await worker.run_once() == []  # nothing is ready while the request is pending
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    [resumed] = await worker.run_once()
    assert resumed.outcome == "finished"
    assert tickets.delete_runs("t3") == 1
    assert await worker.run_once() == []


async def test_own_client_with_gated_options_then_outcome_and_resume(
    gate: Gate, queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    from claude_agent_sdk import ClaudeSDKClient

    options = gate.options(fake_options)
    async with ClaudeSDKClient(options, transport=world.transport(options)) as client:
        await client.query(calls(("delete_ticket", {"id": "t3"})))
        messages = [message async for message in client.receive_response()]
    assert isinstance(messages[-1], ResultMessage)
    outcome = parked(gate.outcome(messages[-1]))
    assert tickets.delete_runs() == 0
    queue.decide(outcome.request_ids[0], Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


async def test_an_edit_is_checked_against_the_tools_schema(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    from crossgate import InvalidArgumentsError

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "string", "pattern": "^t[0-9]+$"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    gate = Gate(queue, options=fake_options, transport=world.transport, args_schemas={"delete_ticket": schema})
    outcome = parked(await gate.run(calls(("delete_ticket", {"id": "t3"}))))
    rid = outcome.request_ids[0]
    assert queue.get(rid).args_schema == schema
    with pytest.raises(InvalidArgumentsError):
        queue.decide(rid, Edit(args={"id": "t3", "cascade": True}), reviewer="ann")
    assert queue.get(rid).status is RequestStatus.PENDING
    queue.decide(rid, Edit(args={"id": "t1"}), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs() == 1
    assert tickets.delete_runs("t1") == 1


async def test_a_rule_on_the_calls_context_sees_what_the_cli_reported(
    queue: ReviewQueue, world: World, fake_options: ClaudeAgentOptions, tickets: TicketStore
) -> None:
    unattended = "Deletes are not allowed in unattended (bypassPermissions) sessions."
    queue.policy = queue.policy.with_rules(
        PolicyRule(
            name="no-unattended-deletes",
            verdict=VerdictKind.DENY,
            tool="*delete_ticket",
            context=({"arg": "permission_mode", "kind": "equals", "value": "bypassPermissions"},),
            reason=unattended,
        )
    )
    bypass = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers, permission_mode="bypassPermissions")
    with pytest.warns(ShadowedCallbackWarning):
        done = await Gate(queue, options=bypass, transport=world.transport).run(calls(("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    assert told(world) == [f"PreToolUse:mcp__tickets__delete_ticket hook error: {unattended}"]
    assert queue.pending() == [] and tickets.delete_runs() == 0
    attended = ClaudeAgentOptions(mcp_servers=fake_options.mcp_servers)
    outcome = parked(
        await Gate(queue, options=attended, transport=world.transport).run(calls(("delete_ticket", {"id": "t3"})))
    )
    assert queue.get(outcome.request_ids[0]).call.context["permission_mode"] == "default", "asked, not denied"

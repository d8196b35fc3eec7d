"""Gate against the real bundled Claude Code CLI, offline against the scripted Messages API.

Each CLI start costs about a second, so every test here covers several paths at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, ToolPermissionContext

from crossgate import (
    ApprovalRequest,
    Approve,
    Edit,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    RequestQuery,
    RequestStatus,
    Respond,
    ReviewQueue,
)
from crossgate.decisions import AnyDecision
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate, ShadowedCallbackWarning
from crossgate_claude.testing import MessagesAPI, all_tool_results, result_text, tool_results, tool_uses
from tests.adapters.claude.conftest import DANGEROUS, PROTECTED
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."
RM_REJECTION = "Keep build/: the release job still reads it. Clean only build/tmp."
QUESTION = {
    "questions": [
        {
            "question": "Which ticket should I delete?",
            "header": "Ticket",
            "options": [{"label": "t3", "description": "spam"}, {"label": "t1", "description": "a customer"}],
            "multiSelect": False,
        }
    ]
}


def calls(*lines: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(f"CALL {name} {json.dumps(args)}" for name, args in lines)


def told(api: MessagesAPI) -> list[tuple[bool, str]]:
    """(is_error, text) the model received for each of its tool calls, in order."""
    results = all_tool_results(api.requests)
    return [
        (bool(results[u["id"]].get("is_error")), result_text(results[u["id"]]))
        for u in tool_uses(api.requests)
        if u["id"] in results
    ]


def reviewer(queue: ReviewQueue, decide: Callable[[ApprovalRequest], AnyDecision]) -> asyncio.Task[list[str]]:
    """A reviewer that decides every request as it turns up, until cancelled; returns what it saw."""

    async def watch() -> list[str]:
        seen: list[str] = []
        try:
            while True:
                for request in queue.pending():
                    seen.append(json.dumps(request.call.args, sort_keys=True))
                    queue.decide(request.id, decide(request), reviewer="ann")
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            return seen

    return asyncio.ensure_future(watch())


async def test_seed_scenario_t3_approved_t1_rejected_verbatim(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=cli_options)
    first = await gate.run(calls(("delete_ticket", {"id": "t3"}), ("delete_ticket", {"id": "t1"})))
    assert isinstance(first, Parked)
    assert tickets.ids() == ["prod-1", "t1", "t2", "t3"]  # nothing deleted while waiting
    queue.decide(first.request_ids[0], Approve(), reviewer="ann")
    second = await gate.resume(first.parked_run)
    assert isinstance(second, Parked)
    assert second.run == first.run  # the same Claude session goes on
    assert queue.get(second.request_ids[0]).call.args == {"id": "t1"}
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    requests_before = len(messages_api.requests)
    queue.decide(second.request_ids[0], Reject(message=REJECTION), reviewer="ann")
    done = await gate.resume(second.parked_run)
    assert isinstance(done, Finished)
    assert done.result.stop_reason == "end_turn"
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert tickets.delete_runs() == 1
    # The next Messages API request carries the reviewer's words exactly, as an error tool_result.
    [rejected] = tool_results(messages_api.requests[requests_before])
    assert rejected["is_error"] is True
    assert result_text(rejected) == REJECTION
    assert told(messages_api) == [(False, "deleted ticket t3"), (True, REJECTION)]
    assert [queue.get(r).status for r in (*first.request_ids, *second.request_ids)] == [
        RequestStatus.APPLIED,
        RequestStatus.REJECTED,
    ]


async def test_bash_approve_edit_reject_and_respond_to_ask_user_question(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI
) -> None:
    work = Path(str(cli_options.cwd))
    (work / "build").mkdir()

    def decide(request: ApprovalRequest) -> AnyDecision:
        if request.call.tool == "AskUserQuestion":
            return Respond(content="t3")
        command = str(request.call.args["command"])
        if command.startswith("rm"):
            return Reject(message=RM_REJECTION)
        if "approved" in command:
            return Approve()
        return Edit(args={**request.call.args, "command": "echo two > out.txt"})

    options = replace(cli_options, tools=["Bash", "AskUserQuestion"])
    gate = Gate(queue, options=options, defer=False, hold=30.0)
    watching = reviewer(queue, decide)
    done = await gate.run(
        calls(
            ("Bash", {"command": "echo one > out.txt"}),
            ("Bash", {"command": "rm -rf build"}),
            ("AskUserQuestion", QUESTION),
            ("Bash", {"command": "echo approved > approved.txt"}),
        )
    )
    watching.cancel()
    assert len(await watching) == 4
    assert (work / "approved.txt").read_text() == "approved\n"
    assert isinstance(done, Finished)
    assert (work / "out.txt").read_text() == "two\n"
    assert (work / "build").is_dir()
    results = told(messages_api)
    assert results[1] == (True, RM_REJECTION)
    # respond answers AskUserQuestion: the CLI hands the reviewer's answer to the model as the tool's result.
    assert results[2][0] is False
    assert '"Which ticket should I delete?"="t3"' in results[2][1]
    # Requests made by can_use_tool carry what the CLI said about the call.
    edited = queue.list_requests(RequestQuery(newest_first=False)).items[0]
    assert edited.call.context["display_name"] == "Bash"
    executed = [e for e in queue.events(request_id=edited.id) if e.kind in ("ran", "not_run")]
    assert executed[-1].payload["error"] is None  # the CLI ran exactly the edited input


async def test_policy_deny_holds_under_bypass_and_ask_overrides_allowed_tools(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    options = replace(
        cli_options, permission_mode="bypassPermissions", allowed_tools=["mcp__tickets__delete_ticket", "Bash"]
    )
    gate = Gate(queue, options=options, hold=30.0)
    watching = reviewer(queue, lambda request: Edit(args={"id": "t2"}))
    with pytest.warns(ShadowedCallbackWarning):
        done = await gate.run(
            calls(
                ("delete_ticket", {"id": "prod-1"}),
                ("Bash", {"command": "rm -rf /srv/data"}),
                ("delete_ticket", {"id": "t3"}),
            )
        )
    watching.cancel()
    assert await watching == [json.dumps({"id": "t3"})]  # asked although allowed_tools and the mode approve it
    assert isinstance(done, Finished)
    assert tickets.ids() == ["prod-1", "t1", "t3"]
    assert tickets.delete_runs("prod-1") == 0
    assert told(messages_api) == [
        (True, f"PreToolUse:mcp__tickets__delete_ticket hook error: {PROTECTED}"),
        (True, f"PreToolUse:Bash hook error: {DANGEROUS}"),
        (False, "deleted ticket t2"),
    ]


class UnreachableStore:
    """Every store call fails, as a database that went away would."""

    def __getattr__(self, name: str) -> object:
        def fail(*args: object, **kwargs: object) -> object:
            raise ConnectionError("could not connect to the review database")

        return fail


async def test_an_unreachable_store_denies(
    cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    gate = Gate(ReviewQueue(UnreachableStore()), options=cli_options)  # type: ignore[arg-type]
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    assert tickets.delete_runs() == 0
    [(is_error, text)] = told(messages_api)
    assert is_error
    assert "crossgate could not reach a decision" in text
    assert "could not connect to the review database" in text


async def test_remember_for_the_session_is_honoured_by_the_cli(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    gate = Gate(queue, options=cli_options, defer=False, hold=30.0)
    options = gate.options()
    assert options.can_use_tool is not None
    gated, asked = options.can_use_tool, []

    async def counting(tool: str, args: dict[str, object], context: ToolPermissionContext) -> object:
        asked.append(args)
        return await gated(tool, args, context)

    session_wide = Remember(scope=RememberScope.SESSION, match=RememberMatch.TOOL)
    watching = reviewer(queue, lambda request: Approve(remember=session_wide))
    async with ClaudeSDKClient(replace(options, can_use_tool=counting)) as client:  # type: ignore[arg-type]
        await client.query(calls(("delete_ticket", {"id": "t3"}), ("delete_ticket", {"id": "t2"})))
        async for _ in client.receive_response():
            pass
    watching.cancel()
    assert await watching == [json.dumps({"id": "t3"})]
    assert asked == [{"id": "t3"}]  # the session rule let the CLI run the second delete without asking
    assert tickets.ids() == ["prod-1", "t1"]
    assert [e.kind for e in queue.events()].count("auto_allowed") == 1  # the standing rule, in the hook


async def test_a_revoked_standing_rule_asks_again_despite_the_cli_session_rule(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    def decide(request: ApprovalRequest) -> AnyDecision:
        if request.call.tool == "Bash":  # by now the CLI holds a session rule allowing delete_ticket
            for rule in queue.rules():
                queue.revoke_rule(rule.id, actor="ann")
            return Approve()
        if request.call.args == {"id": "t3"}:
            return Approve(remember=Remember(scope=RememberScope.SESSION, match=RememberMatch.TOOL))
        return Reject(message="The standing rule was revoked; t2 stays.")

    gate = Gate(queue, options=cli_options, defer=False, hold=30.0)
    watching = reviewer(queue, decide)
    done = await gate.run(
        calls(("delete_ticket", {"id": "t3"}), ("Bash", {"command": "true"}), ("delete_ticket", {"id": "t2"}))
    )
    watching.cancel()
    assert await watching == [json.dumps(a) for a in ({"id": "t3"}, {"command": "true"}, {"id": "t2"})]
    assert isinstance(done, Finished)
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    assert told(messages_api)[-1] == (True, "The standing rule was revoked; t2 stays.")


async def test_every_call_of_a_turn_reaches_the_queue_and_a_retried_one_gets_its_decision(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    # The CLI keeps only one deferred call per turn, so the others are refused for now, and queued; the
    # model makes them again after the resume, and each retry gets the decision its request received.
    gate = Gate(queue, options=cli_options)
    script = "\n".join(
        [
            'CALL delete_ticket {"id": "t3"}',
            'ALSO delete_ticket {"id": "t1"}',
            'ALSO delete_ticket {"id": "t2"}',
            'CALL delete_ticket {"id": "t1"}',  # the model's retries, after the first call's resume
            'CALL delete_ticket {"id": "t2"}',
        ]
    )
    parked = await gate.run(script)
    assert isinstance(parked, Parked)
    first, second, third = queue.list_requests(RequestQuery(newest_first=False)).items
    assert [r.call.args for r in (first, second, third)] == [{"id": "t3"}, {"id": "t1"}, {"id": "t2"}]
    assert {r.status for r in (first, second, third)} == {RequestStatus.PENDING}
    assert parked.request_ids == (first.id,)
    assert second.call.context["queued_behind"] == third.call.context["queued_behind"] == first.id

    # Only the first is decided: the retried t1 finds its request pending and waits on it (no new request).
    queue.decide(first.id, Approve(), reviewer="ann")
    again = await gate.resume(parked.parked_run)
    assert isinstance(again, Parked)
    assert again.request_ids == (second.id,)
    assert tickets.ids() == ["prod-1", "t1", "t2"]
    queue.decide(second.id, Approve(), reviewer="ann")
    queue.decide(third.id, Reject(message=REJECTION), reviewer="bob")
    done = await gate.resume(again.parked_run)
    assert isinstance(done, Finished)
    assert tickets.ids() == ["prod-1", "t2"]  # t1 ran on its retry; t2 was rejected
    assert tickets.delete_runs() == 2
    assert len(queue.list_requests().items) == 3  # every retry found its decision: nobody was asked again
    assert [queue.get(r.id).status for r in (first, second, third)] == [RequestStatus.APPLIED] * 2 + [
        RequestStatus.REJECTED
    ]
    results = told(messages_api)
    assert [results[i] for i in (0, 3, 4)] == [
        (False, "deleted ticket t3"),
        (False, "deleted ticket t1"),
        (True, REJECTION),
    ]
    for is_error, text in results[1:3]:  # the queued calls, for now
        assert is_error and "already waiting for a person's review" in text


async def test_a_permission_request_hook_may_notify_but_not_approve(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    # The CLI races PermissionRequest hooks against can_use_tool; an allowing hook would win the race.
    notified: list[str] = []

    async def approve_everything(data: Any, tool_use_id: str | None, context: Any) -> Any:
        notified.append(str(data["tool_name"]))
        return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}

    options = replace(cli_options, hooks={"PermissionRequest": [HookMatcher(hooks=[approve_everything])]})
    gate = Gate(queue, options=options, defer=False, hold=0.5)
    done = await gate.run(calls(("delete_ticket", {"id": "t3"})))
    assert isinstance(done, Finished)
    assert notified == ["mcp__tickets__delete_ticket"]
    assert tickets.delete_runs() == 0
    [(is_error, text)] = told(messages_api)
    assert is_error
    assert "No reviewer answered within 0.5 seconds" in text


async def test_an_approved_call_that_fails_is_recorded_with_its_error(
    queue: ReviewQueue, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI
) -> None:
    options = replace(cli_options, tools=["Bash"])
    gate = Gate(queue, options=options, defer=False, hold=30.0)
    watching = reviewer(queue, lambda request: Approve())
    done = await gate.run(calls(("Bash", {"command": "echo fine"}), ("Bash", {"command": "echo boom >&2; exit 3"})))
    watching.cancel()
    assert len(await watching) == 2
    assert isinstance(done, Finished)
    fine, failed = queue.list_requests(RequestQuery(newest_first=False)).items
    [ok] = [e.payload for e in queue.events(request_id=fine.id) if e.kind in ("ran", "not_run")]
    assert ok["ran"] is True and ok["error"] is None and "fine" in str(ok["result"])
    [bad] = [e.payload for e in queue.events(request_id=failed.id) if e.kind in ("ran", "not_run")]
    assert bad["ran"] is True and bad["result"] is None
    assert str(bad["error"]).startswith("the tool failed: ") and "boom" in str(bad["error"]), bad
    assert told(messages_api)[1][0] is True, "the model was told the call failed"

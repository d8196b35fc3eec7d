"""crossgate's ``BeforeToolCallEvent`` hook: the one place a gated run's tool bodies are called.

Strands hands every hook each call of a run before its tool runs; a hook may cancel the call (its message
becomes an error result), swap the tool that runs, or raise an interrupt, which stops the run with
``stop_reason == "interrupt"``. The gate installs :class:`Gating` on an agent once; it judges calls only
inside a ``Gate.run`` or ``Gate.resume`` (a :class:`Drive` in a context variable), and cancels every call
of an agent invoked outside the gate, so a gated agent called directly runs no tool.

- first sight of a call: arguments the tool's input schema refuses are answered with why, never judged
  nor run. Otherwise the policy judges them (with the standing rules). Allow runs the tool here; deny
  cancels the call with the policy's reason; ask raises Strands' own interrupt, and the gate parks the
  agent's snapshot with the request.
- the call again, its request stored (a resume): ``crossgate.adapter.run_checked`` decides. The tool runs
  only for crossgate's approve or edit of that very call, with exactly the approved (or edited)
  arguments, and only once ``mark_applied`` accepted them. The interrupt's response is never read: the
  decision is crossgate's, and a call answered natively while its request is pending runs nothing.

Whatever the hook decided, Strands then "runs" an :class:`Answered` stand-in that hands the model the
recorded result, so no tool body runs outside this module. A crossgate error raised here (the store
failing, a server refusing the agent's credential) leaves the hook, and Strands raises it out of the run.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from pydantic_core import to_jsonable_python
from strands import Agent
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.types._events import ToolInterruptEvent  # not re-exported; Strands' executor imports it here
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolResult, ToolResultStatus, ToolSpec, ToolUse

from crossgate import AdapterError, CrossgateError, FingerprintMismatchError, InvalidArgumentsError, VerdictKind
from crossgate.adapter import (
    AdapterQueue,
    RunScope,
    ToolAnswer,
    deny_message,
    find_request,
    request_id,
    run_checked,
    run_recorded,
)
from crossgate.decisions import validate_args
from crossgate.model import JsonObject
from crossgate_strands._capabilities import CAPABILITIES, FRAMEWORK

INTERRUPT = "crossgate"
"""The name of the interrupt the hook raises for a call that needs a reviewer."""
OUTSIDE_GATE = "crossgate did not run {tool}: this agent's tools run only through crossgate_strands.Gate."
NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this call was answered outside "
    "crossgate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)
INVALID = "crossgate did not run {tool}: {error}. Fix the arguments and retry."
SELF_INTERRUPT = "{tool} raised its own Strands interrupt; crossgate gates a call before it runs, not inside it"


def strands_request_id(run: str, agent: str, call_id: str) -> str:
    """The request id of one tool call (``crossgate.adapter.request_id`` with tag ``strands``)."""
    return request_id("strands", run, agent, call_id)


@dataclass(slots=True)
class Drive:
    """One gated SDK run (a run, or one resume of it): the queue, the agent's name and the run's scope."""

    queue: AdapterQueue
    agent: str
    scope: RunScope


ACTIVE: ContextVar[Drive | None] = ContextVar("crossgate_strands_drive", default=None)
_INSTALLED: weakref.WeakSet[Agent] = weakref.WeakSet()


def install(sdk_agent: Agent) -> None:
    """Add crossgate's hook to ``sdk_agent`` once (after its own hooks, so it sees their changes)."""
    if sdk_agent not in _INSTALLED:
        sdk_agent.hooks.add_hook(Gating())
        _INSTALLED.add(sdk_agent)


class Gating(HookProvider):
    """Judges every call of a gated agent with crossgate before its tool runs."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        tool = event.selected_tool
        if event.cancel_tool or tool is None:  # cancelled by another hook, or unknown: nothing runs
            return
        drive = ACTIVE.get()
        if drive is None:
            event.cancel_tool = OUTSIDE_GATE.format(tool=tool.tool_name)
            return
        await _judge(drive, event, tool)


async def _judge(drive: Drive, event: BeforeToolCallEvent, tool: AgentTool) -> None:
    use = event.tool_use
    name, call_id = use["name"], str(use["toolUseId"])
    args: JsonObject = to_jsonable_python(use["input"])
    rid = strands_request_id(drive.scope.run, drive.agent, call_id)

    async def body(run_args: JsonObject) -> ToolResult:
        return await _run_tool(tool, {**use, "input": dict(run_args)}, event.invocation_state)

    request = find_request(drive.queue, rid)
    if request is not None:  # seen before: a resume (or a replay of one)
        if request.resolution() is None:
            event.cancel_tool = NOT_THROUGH_GATE.format(tool=name)
            return
        answer = await run_checked(
            drive.queue, request, args, body, actor=FRAMEWORK, call=request.call, summary=text, tool=name
        )
        _answer(event, tool, answer)
        return
    spec = tool.tool_spec
    schema = cast(JsonObject | None, spec.get("inputSchema", {}).get("json"))
    try:  # what the tool's schema refuses is never judged nor run
        validate_args(args, schema)
    except InvalidArgumentsError as exc:
        event.cancel_tool = INVALID.format(tool=name, error=exc)
        return
    call = drive.scope.call(FRAMEWORK, name, drive.agent, args, call_id)
    try:
        submission = drive.queue.prepare(
            call,
            args_schema=schema,
            description=spec.get("description") or None,
            requested_by=drive.scope.requested_by,
            capabilities=CAPABILITIES,
            request_id=rid,
        )
    except FingerprintMismatchError as exc:
        event.cancel_tool = f"crossgate did not run {name}: {exc}"
        return
    if submission.request is not None:
        drive.scope.asked[call_id] = submission
        event.interrupt(INTERRUPT, reason={"request": rid, "tool": name, "call_id": call_id})  # raises: a pause
    if submission.verdict.kind is VerdictKind.DENY:
        message = deny_message(name, submission.verdict)
        drive.queue.record_outcome(None, ran=False, result=message, call=call)
        event.cancel_tool = message
        return
    _answer(event, tool, await run_recorded(drive.queue, None, args, body, call=call, summary=text))


async def _run_tool(tool: AgentTool, use: ToolUse, invocation_state: dict[str, Any]) -> ToolResult:
    """Run ``tool`` as Strands' executor would, to its final result (its progress events are not relayed)."""
    result: ToolResult | None = None
    try:
        async for event in tool.stream(use, invocation_state):
            if isinstance(event, ToolInterruptEvent):
                raise AdapterError(SELF_INTERRUPT.format(tool=tool.tool_name))
            if isinstance(event, ToolResultEvent):
                result = event.tool_result
    except CrossgateError:
        raise
    except Exception as exc:  # what Strands' executor makes of a tool that raises
        return {"toolUseId": use["toolUseId"], "status": "error", "content": [{"text": f"Error: {exc}"}]}
    if result is None:
        raise AdapterError(f"{tool.tool_name} ended without a result")
    return result


def _answer(event: BeforeToolCallEvent, tool: AgentTool, answer: ToolAnswer[ToolResult]) -> None:
    """Hand the model ``answer``: the tool's own result, or crossgate's message (a success only for respond)."""
    call_id = str(event.tool_use["toolUseId"])
    if answer.ran and answer.result is not None:
        result = answer.result
    else:
        status: ToolResultStatus = "success" if answer.responded else "error"
        result = {"toolUseId": call_id, "status": status, "content": [{"text": answer.message}]}
    event.selected_tool = Answered(tool, result)


class Answered(AgentTool):
    """A stand-in for ``tool`` that answers with a result crossgate already has; it runs nothing."""

    def __init__(self, tool: AgentTool, result: ToolResult) -> None:
        super().__init__()
        self._tool = tool
        self._result = result

    @property
    def tool_name(self) -> str:
        return self._tool.tool_name

    @property
    def tool_spec(self) -> ToolSpec:
        return self._tool.tool_spec

    @property
    def tool_type(self) -> str:
        return "crossgate"

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> AsyncGenerator[Any]:
        yield ToolResultEvent({**self._result, "toolUseId": str(tool_use["toolUseId"])})


def text(result: ToolResult) -> str:
    """The recorded text of a tool's result: its text blocks (anything else as JSON)."""
    parts = [c["text"] if "text" in c else str(to_jsonable_python(c)) for c in result.get("content", [])]
    body = " ".join(parts)
    return body if result.get("status") != "error" else f"error: {body}"

"""crossgate's toolset: the one place a gated run's tool bodies are called.

``Gating`` is a per-run capability whose ``get_wrapper_toolset`` wraps the agent's assembled toolset in
a :class:`GatedToolset`. The SDK validates each call's arguments with the tool's schema first (a string
``"1000000"`` for an integer parameter reaches the policy as the number), then ``call_tool``:

- not approved yet: the policy judges the validated arguments (with the standing rules). Allow runs the
  body; deny answers the model with the policy's reason; ask raises ``ApprovalRequired``, so the run ends
  with ``DeferredToolRequests`` and the gate parks it with the request.
- approved (a resume): ``crossgate.adapter.run_checked`` decides. The body runs only for crossgate's
  approve or edit of that very call, with exactly the approved (or edited) arguments, and only once
  ``mark_applied`` accepted them; a second resume from the same history is refused there, so nothing
  runs twice.

Tools declared ``requires_approval=True`` are gated by the policy like every other tool: crossgate
decides which calls pause.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai import ApprovalRequired, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset
from pydantic_core import to_jsonable_python

from crossgate import ApprovalRequest, FingerprintMismatchError, ToolCall, VerdictKind
from crossgate.adapter import AdapterQueue, RunScope, deny_message, find_request, run_checked, run_recorded
from crossgate.model import JsonObject
from crossgate_pydantic_ai._capabilities import CAPABILITIES, FRAMEWORK
from crossgate_pydantic_ai._scope import pydantic_ai_request_id

NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this call was approved outside "
    "crossgate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)


@dataclass
class GatedToolset(WrapperToolset[Any]):
    """Wraps an agent's toolset so that every call is judged by crossgate before its body runs."""

    queue: AdapterQueue
    agent: str
    scope: RunScope

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await self.wrapped.get_tools(ctx)
        # The SDK stubs 'unapproved' calls before any toolset sees them; crossgate's policy decides instead.
        return {
            name: replace(tool, tool_def=replace(tool.tool_def, kind="function"))
            if tool.tool_def.kind == "unapproved"
            else tool
            for name, tool in tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        call_id = ctx.tool_call_id or ""
        args: JsonObject = to_jsonable_python(tool_args)
        call = self.scope.call(FRAMEWORK, name, self.agent, args, call_id)
        request_id = pydantic_ai_request_id(self.scope.run, self.agent, call_id)
        if ctx.tool_call_approved:
            request = find_request(self.queue, request_id)
            if request is None:
                return await self._by_policy(name, tool_args, ctx, tool, call, request_id, asking=False)
            return await self._by_decision(name, tool_args, ctx, tool, request)
        return await self._by_policy(name, tool_args, ctx, tool, call, request_id, asking=True)

    async def _by_policy(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        call: ToolCall,
        request_id: str,
        *,
        asking: bool,
    ) -> Any:
        try:
            submission = self.queue.prepare(
                call,
                args_schema=tool.tool_def.parameters_json_schema,
                description=tool.tool_def.description or None,
                requested_by=self.scope.requested_by,
                capabilities=CAPABILITIES,
                request_id=request_id if asking else None,
            )
        except FingerprintMismatchError as exc:
            return f"crossgate did not run {name}: {exc}"
        if submission.request is not None:
            if not asking:  # approved natively, with no crossgate decision: never run it
                return NOT_THROUGH_GATE.format(tool=name)
            self.scope.asked[call.call_id or ""] = submission
            raise ApprovalRequired(metadata={"crossgate_request": submission.request.id})
        if submission.verdict.kind is VerdictKind.DENY:
            message = deny_message(name, submission.verdict)
            self.queue.record_outcome(None, ran=False, result=message, call=call)
            return message
        return await self._execute(name, tool_args, ctx, tool, call)

    async def _by_decision(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        request: ApprovalRequest,
    ) -> Any:
        if request.resolution() is None:  # approved natively while crossgate's request is pending
            return NOT_THROUGH_GATE.format(tool=name)
        proposed: JsonObject = to_jsonable_python(tool_args)
        approved = request.approved_args()
        # The SDK hands over the validated arguments (defaults filled in), so an edit that leaves a default
        # out arrives with it filled in: when the approved arguments validate to exactly these, they are
        # the ones about to run, and the check binds to them.
        if approved is not None and to_jsonable_python(tool.args_validator.validate_python(approved)) == proposed:
            proposed = approved

        async def body(_args: JsonObject) -> Any:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)

        # The call id comes from the parked history (the agent may rewrite it): bind the decision to this tool.
        answer = await run_checked(self.queue, request, proposed, body, actor=FRAMEWORK, call=request.call, tool=name)
        return answer.reply

    async def _execute(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        call: ToolCall,
    ) -> Any:
        """Run a call the policy allowed outright, and record it."""

        async def body(_args: JsonObject) -> Any:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)

        answer = await run_recorded(self.queue, None, call.args, body, call=call)
        return answer.result


@dataclass
class Gating(AbstractCapability[Any]):
    """The per-run capability that puts :class:`GatedToolset` around the agent's toolset."""

    queue: AdapterQueue
    agent: str
    scope: RunScope

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        return GatedToolset(toolset, queue=self.queue, agent=self.agent, scope=self.scope)

"""crossgate's toolset: the one place a gated run's tool bodies are called.

``Gating`` is a per-run capability whose ``get_wrapper_toolset`` wraps the agent's assembled toolset in
a :class:`GatedToolset`. The SDK validates each call's arguments with the tool's schema first (a string
``"1000000"`` for an integer parameter reaches the policy as the number), then ``call_tool``:

- not approved yet: the policy judges the validated arguments (with the standing rules). Allow runs the
  body; deny answers the model with the policy's reason; ask raises ``ApprovalRequired``, so the run ends
  with ``DeferredToolRequests`` and the gate parks it with the request.
- approved (a resume): the body runs only for crossgate's approve or edit of that very call, with exactly
  the approved (or edited) arguments, and only after ``mark_applied`` accepted them. A second resume from
  the same history is refused there, so nothing runs twice.

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

from crossgate import (
    ApprovalRequest,
    Approve,
    Edit,
    FingerprintMismatchError,
    NotFoundError,
    Reject,
    Respond,
    ReviewQueue,
    ToolCall,
    VerdictKind,
)
from crossgate.model import JsonObject
from crossgate_pydantic_ai._capabilities import CAPABILITIES
from crossgate_pydantic_ai._steps import RunScope, check_before_run, deny_message, request_id_for, tool_call

NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this call was approved outside "
    "crossgate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)


@dataclass
class GatedToolset(WrapperToolset[Any]):
    """Wraps an agent's toolset so that every call is judged by crossgate before its body runs."""

    queue: ReviewQueue
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
        call = tool_call(name, self.agent, args, call_id, self.scope)
        request_id = request_id_for(self.scope.run, self.agent, call_id)
        if ctx.tool_call_approved:
            try:
                request = self.queue.get(request_id)
            except NotFoundError:
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
        return await self._execute(name, tool_args, ctx, tool, None, call)

    async def _by_decision(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        request: ApprovalRequest,
    ) -> Any:
        resolution = request.resolution()
        approved = request.approved_args()
        if not isinstance(resolution, (Approve, Edit)) or approved is None:
            if isinstance(resolution, Respond):
                return resolution.content
            return resolution.message if isinstance(resolution, Reject) else NOT_THROUGH_GATE.format(tool=name)
        # The SDK hands over the validated arguments (defaults filled in): compare like with like.
        expected = to_jsonable_python(tool.args_validator.validate_python(approved))
        if expected != to_jsonable_python(tool_args):
            message = (
                f"crossgate did not run {name}: request {request.id} was reviewed for other arguments "
                "than the ones about to run."
            )
            self.queue.record_outcome(request, ran=False, error=message)
            return message
        refusal = check_before_run(self.queue, request, approved)
        if refusal is not None:
            return refusal
        return await self._execute(name, tool_args, ctx, tool, request, request.call)

    async def _execute(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
        request: ApprovalRequest | None,
        call: ToolCall,
    ) -> Any:
        try:
            output = await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except Exception as exc:
            self.queue.record_outcome(request, ran=True, error=f"{type(exc).__name__}: {exc}", call=call)
            raise
        self.queue.record_outcome(request, ran=True, result=str(output), call=call)
        return output


@dataclass
class Gating(AbstractCapability[Any]):
    """The per-run capability that puts :class:`GatedToolset` around the agent's toolset."""

    queue: ReviewQueue
    agent: str
    scope: RunScope

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        return GatedToolset(toolset, queue=self.queue, agent=self.agent, scope=self.scope)

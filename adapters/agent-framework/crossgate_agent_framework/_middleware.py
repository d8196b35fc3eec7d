"""crossgate's function middleware: the one place a gated run's tool bodies are called.

``Gating`` is a per-run ``FunctionMiddleware``. The SDK hands it every call of the run after it validated
the model's arguments against the tool's input model:

- arguments the tool's input model refuses are answered with why, never judged and never handed on.
- first sight of a call: the policy judges the validated arguments (with the standing rules). Allow runs
  the body through the SDK's pipeline; deny answers the model with the policy's reason; ask answers with
  a ``function_approval_request`` (the SDK's middleware-driven approval), so the run returns with
  ``user_input_requests`` and the gate parks the session with the request.
- the call again with the SDK's ``approval_response`` (a resume): ``crossgate.adapter.run_checked``
  decides. The body runs only for crossgate's approve or edit of that very call, with exactly the
  approved (or edited) arguments, and only once ``mark_applied`` accepted them; a second resume from
  the same session is refused there, so nothing runs twice.

A crossgate error inside the SDK's loop (the store failing, a server refusing the agent's credential) is
raised as ``MiddlewareFailure`` (the SDK's fail-closed signal; any other exception becomes a tool result
the model reads), and the gate raises the crossgate error again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware, MiddlewareFailure
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from crossgate import ApprovalRequest, CrossgateError, FingerprintMismatchError, ToolCall, VerdictKind
from crossgate.adapter import AdapterQueue, RunScope, deny_message, find_request, request_id, run_checked, run_recorded
from crossgate.fingerprint import same_json
from crossgate.model import JsonObject
from crossgate_agent_framework._capabilities import CAPABILITIES, FRAMEWORK

NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this call was approved outside "
    "crossgate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)


INVALID = "crossgate did not run {tool}: its arguments do not fit the tool's input model ({error}). Fix them and retry."


def agent_framework_request_id(run: str, agent: str, call_id: str) -> str:
    """The request id of one tool call (``crossgate.adapter.request_id`` with tag ``af``)."""
    return request_id("af", run, agent, call_id)


class Gating(FunctionMiddleware):
    """Judges every call of one SDK run with crossgate before its body runs."""

    def __init__(self, queue: AdapterQueue, agent: str, scope: RunScope) -> None:
        self.queue = queue
        self.agent = agent
        self.scope = scope

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        refused = _invalid(context)
        if refused is not None:  # never judged, and never handed on: nothing below may run it
            context.result = INVALID.format(tool=context.function.name, error=refused)
            return
        try:
            await self._gate(context, call_next)
        except CrossgateError as exc:  # the SDK would hand any other exception to the model as a tool result
            raise MiddlewareFailure(str(exc)) from exc

    async def _gate(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        tool = context.function.name
        call_id = str(context.metadata["call_id"])
        args: JsonObject = to_jsonable_python(_arguments(context.arguments))
        call = self.scope.call(FRAMEWORK, tool, self.agent, args, call_id)
        rid = agent_framework_request_id(self.scope.run, self.agent, call_id)
        if "approval_response" in context.metadata:
            request = find_request(self.queue, rid)
            if request is None or request.resolution() is None:  # approved natively, with no crossgate decision
                context.result = NOT_THROUGH_GATE.format(tool=tool)
                return
            await self._by_decision(context, call_next, request, args)
            return
        try:
            submission = self.queue.prepare(
                call,
                args_schema=context.function.parameters(),
                description=context.function.description or None,
                requested_by=self.scope.requested_by,
                capabilities=CAPABILITIES,
                request_id=rid,
            )
        except FingerprintMismatchError as exc:
            context.result = f"crossgate did not run {tool}: {exc}"
            return
        if submission.request is not None:
            self.scope.asked[call_id] = submission
            context.result = _approval_request(context, call_id, tool, args)
            return
        if submission.verdict.kind is VerdictKind.DENY:
            message = deny_message(tool, submission.verdict)
            self.queue.record_outcome(None, ran=False, result=message, call=call)
            context.result = message
            return
        await self._allowed(context, call_next, call)

    async def _by_decision(
        self,
        context: FunctionInvocationContext,
        call_next: Callable[[], Awaitable[None]],
        request: ApprovalRequest,
        proposed: JsonObject,
    ) -> None:
        async def body(run_args: JsonObject) -> Any:
            if same_json(run_args, proposed):
                await call_next()
                return context.result
            # An edit: the SDK refuses changed arguments after an approval (it would ask again), so the tool
            # is invoked here, with the reviewer's arguments and a context that carries no SDK approval.
            fresh = FunctionInvocationContext(
                function=context.function, arguments=run_args, session=context.session, kwargs=dict(context.kwargs)
            )
            return await context.function.invoke(arguments=run_args, context=fresh, tool_call_id=request.call.call_id)

        tool = context.function.name  # the call id comes from the parked session: bind the decision to this tool
        answer = await run_checked(
            self.queue, request, proposed, body, actor=FRAMEWORK, call=request.call, summary=text, tool=tool
        )
        context.result = answer.reply

    async def _allowed(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]], call: ToolCall
    ) -> None:
        """Run a call the policy allowed outright, and record it."""

        async def body(_args: JsonObject) -> Any:
            await call_next()
            return context.result

        await run_recorded(self.queue, None, call.args, body, call=call, summary=text)


def _approval_request(context: FunctionInvocationContext, call_id: str, tool: str, args: JsonObject) -> Content:
    occurrence = context.metadata.get("function_call_occurrence_id")
    approval_id = str(occurrence or call_id)
    call = Content.from_function_call(call_id=call_id, name=tool, arguments=args, id=approval_id)
    return Content.from_function_approval_request(id=approval_id, function_call=call)


def _arguments(arguments: BaseModel | Any) -> Any:
    return arguments.model_dump(exclude_unset=True) if isinstance(arguments, BaseModel) else dict(arguments or {})


def _invalid(context: FunctionInvocationContext) -> str | None:
    """Why the tool's input model refuses the arguments (the SDK hands invalid ones to middleware to repair)."""
    model = context.function.input_model
    if model is None or isinstance(context.arguments, BaseModel):
        return None
    try:
        model.model_validate(dict(context.arguments or {}))
    except ValidationError as exc:
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
    return None


def text(result: Any) -> str:
    """The recorded text of a tool's result (the SDK's ``list[Content]``, or a plain value)."""
    if isinstance(result, list):
        return " ".join(c.text if isinstance(c, Content) and c.text is not None else str(c) for c in result)
    return str(result)

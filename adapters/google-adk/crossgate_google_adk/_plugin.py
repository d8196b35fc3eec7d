"""crossgate's ADK plugin: the one place a gated run's tool bodies are called.

``Gating`` is a per-run ``BasePlugin``. ADK hands its ``before_tool_callback`` every call of the run before
the tool runs; whatever it returns is the call's result, and the tool is never called by ADK itself:

- first sight of a call: arguments the tool's schema refuses are answered with why (ADK hands a tool the
  model's arguments unchecked), never judged and never run. Otherwise the policy judges them (with the
  standing rules). Allow runs the tool here; deny answers the model with the policy's reason; ask calls
  ADK's own ``tool_context.request_confirmation`` and ends the turn, so the run stops with an
  ``adk_request_confirmation`` call that the gate parks with the session.
- the call again with a ``ToolConfirmation`` (a resume): ``crossgate.adapter.run_checked`` decides. The tool
  runs only for crossgate's approve or edit of that very call, with exactly the approved (or edited)
  arguments, and only once ``mark_applied`` accepted them. What the confirmation says (confirmed, payload)
  is never read: the decision is crossgate's.

ADK wraps an exception from a plugin in ``RuntimeError``; the gate raises a crossgate error found in its
chain again (fail closed: the store failing, a server refusing the agent's credential).
"""

from __future__ import annotations

from typing import Any

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from pydantic_core import to_jsonable_python

from crossgate import AdapterError, FingerprintMismatchError, InvalidArgumentsError, VerdictKind
from crossgate.adapter import AdapterQueue, RunScope, deny_message, find_request, request_id, run_checked, run_recorded
from crossgate.decisions import validate_args
from crossgate.model import JsonObject
from crossgate_google_adk._capabilities import CAPABILITIES, FRAMEWORK

NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this call was confirmed outside "
    "crossgate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)
INVALID = "crossgate did not run {tool}: {error}. Fix the arguments and retry."
PENDING = "crossgate is holding {tool} for a reviewer's decision (request {request})."


def adk_request_id(run: str, agent: str, call_id: str) -> str:
    """The request id of one tool call (``crossgate.adapter.request_id`` with tag ``adk``)."""
    return request_id("adk", run, agent, call_id)


class Gating(BasePlugin):
    """Judges every call of one ADK run with crossgate before its tool runs."""

    def __init__(self, queue: AdapterQueue, agent: str, scope: RunScope) -> None:
        super().__init__(name="crossgate")
        self.queue = queue
        self.agent = agent
        self.scope = scope

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> Any:
        call_id = tool_context.function_call_id or ""
        args: JsonObject = to_jsonable_python(tool_args)
        rid = adk_request_id(self.scope.run, self.agent, call_id)

        async def body(run_args: JsonObject) -> Any:
            return await tool.run_async(args=dict(run_args), tool_context=tool_context)

        if tool_context.tool_confirmation is not None:  # a resume: crossgate's decision, never the confirmation's
            request = find_request(self.queue, rid)
            if request is None or request.resolution() is None:
                return {"error": NOT_THROUGH_GATE.format(tool=tool.name)}
            answer = await run_checked(
                self.queue, request, args, body, actor=FRAMEWORK, call=request.call, summary=_text, tool=tool.name
            )
            return answer.reply
        if await tool.check_require_confirmation(tool_args, tool_context):
            raise AdapterError(
                f"{tool.name} asks ADK for confirmation itself (require_confirmation=...); "
                "declare it without, crossgate's policy decides which calls pause"
            )
        schema = _schema(tool)
        try:  # ADK hands a tool the model's arguments unchecked: what its schema refuses is never judged nor run
            validate_args(args, schema)
        except InvalidArgumentsError as exc:
            return {"error": INVALID.format(tool=tool.name, error=exc)}
        call = self.scope.call(FRAMEWORK, tool.name, self.agent, args, call_id)
        try:
            submission = self.queue.prepare(
                call,
                args_schema=schema,
                description=tool.description or None,
                requested_by=self.scope.requested_by,
                capabilities=CAPABILITIES,
                request_id=rid,
            )
        except FingerprintMismatchError as exc:
            return {"error": f"crossgate did not run {tool.name}: {exc}"}
        if submission.request is not None:
            self.scope.asked[call_id] = submission
            tool_context.request_confirmation(hint=f"crossgate request {rid}", payload={"request": rid})
            tool_context.actions.skip_summarization = True  # the pause is not a result for the model to read
            return {"error": PENDING.format(tool=tool.name, request=rid)}
        if submission.verdict.kind is VerdictKind.DENY:
            message = deny_message(tool.name, submission.verdict)
            self.queue.record_outcome(None, ran=False, result=message, call=call)
            return message
        return (await run_recorded(self.queue, None, args, body, call=call, summary=_text)).reply


def _schema(tool: BaseTool) -> JsonObject | None:
    declaration = tool._get_declaration()  # ADK's own name for a tool's function declaration
    if declaration is None:
        return None
    if declaration.parameters_json_schema is not None:
        return to_jsonable_python(declaration.parameters_json_schema)
    if declaration.parameters is not None:
        return declaration.parameters.json_schema.model_dump(mode="json", exclude_none=True)
    return None


def _text(result: Any) -> str:
    """The recorded text of a tool's result."""
    return result if isinstance(result, str) else str(to_jsonable_python(result))

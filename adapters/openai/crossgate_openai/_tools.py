"""Gate the function tools of an agent graph: ``needs_approval`` from the policy, and a binding wrapper.

Every ``FunctionTool`` reachable from the starting agent (its tools, the agents behind its ``as_tool``
tools, its handoff targets, recursively) is replaced in its agent's ``tools`` list by a copy whose

- ``needs_approval`` asks the queue's policy (a pure function of tool, arguments and agent): ask pauses
  the run, allow and deny do not;
- ``on_invoke_tool`` is a :class:`GatedInvoker`, the only place the tool body is called. It runs a call
  only if the policy allows it, or if crossgate holds an approve or edit decision for that call id whose
  fingerprint matches the arguments about to run; it marks the request applied before running, so
  nothing runs twice, and records the outcome. A deny answers with the policy's reason; respond answers
  with the reviewer's content; neither runs the tool.

The user's own ``FunctionTool`` objects are left untouched.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents import (
    Agent,
    CodeInterpreterTool,
    FileSearchTool,
    FunctionTool,
    Handoff,
    ImageGenerationTool,
    ProgrammaticToolCallingTool,
    RunContextWrapper,
    ToolSearchTool,
    WebSearchTool,
)
from agents.tool_context import ToolContext

from crossgate import (
    ApprovalRequest,
    Approve,
    ConfigurationError,
    Edit,
    InvalidArgumentsError,
    Policy,
    RequestStatus,
    StoreError,
    ToolCall,
    Verdict,
    VerdictKind,
    parse_args,
)
from crossgate.adapter import AdapterQueue, find_request, run_checked, run_recorded, verified_queue
from crossgate.decisions import check_args_schema, validate_args
from crossgate.model import JsonObject, trusted
from crossgate.queue import REQUESTED_BY
from crossgate_openai._capabilities import FRAMEWORK
from crossgate_openai._scope import Judged, RunScope, current_scope, keep_failure, openai_request_id

ToolInvoker = Callable[[ToolContext[Any], str], Awaitable[Any]]

HOSTED_TOOLS = (
    WebSearchTool,
    FileSearchTool,
    CodeInterpreterTool,
    ImageGenerationTool,
    ToolSearchTool,
    ProgrammaticToolCallingTool,
)
"""Tools the model provider runs on its side: crossgate never sees their calls, so it cannot gate them.
Left as they are when the policy allows them outright, refused at install otherwise (hosted MCP and
hosted shell tools are refused in any case, as every tool that is not a function tool)."""

NOT_THROUGH_GATE = (
    "crossgate did not run {tool}: it needs a reviewer's decision, and this run was not started through "
    "crossgate's Gate, so no decision exists for it. Do not retry it; tell the user it needs approval."
)


ASKS_NOW = (
    "crossgate did not run {tool}: the policy now asks a reviewer about it (it changed during this run). "
    "Nothing was executed. Call {tool} again with the same arguments to ask a reviewer."
)


@dataclass(slots=True)
class GateBinding:
    """The queue the gated tools of one ``Gate`` consult; shared by every tool that gate installed."""

    queue: AdapterQueue


def malformed_message(tool: str, error: InvalidArgumentsError) -> str:
    """What the model reads when its arguments cannot be inspected: nothing ran, and how to fix it."""
    return (
        f"crossgate did not run {tool}: {error}. Nothing was executed. "
        f"Call {tool} again with a JSON object that matches its parameters."
    )


def deny_message(tool: str, verdict: Verdict) -> str:
    """What the model reads for a policy deny: the rule's reason, as an instruction."""
    reason = verdict.reason or "the policy does not allow this call"
    return f"crossgate did not run {tool}: {reason}"


def tool_call(tool: str, agent: str, args: dict[str, Any], call_id: str, scope: RunScope | None) -> ToolCall:
    """The neutral call for one SDK function call.

    Its context is the app's context for the run, and who the run acts for (as the queue puts it, and over
    any app key of that name).
    """
    person = scope.requested_by if scope else None
    context: dict[str, Any] = dict(scope.context) if scope else {}
    context.pop(REQUESTED_BY, None)  # who the run acts for is the gate's to say, never the app context's
    if person is not None:
        context[REQUESTED_BY] = person
    values = {
        "framework": FRAMEWORK,
        "tool": tool,
        "args": args,
        "call_id": call_id,
        "run": scope.run if scope else None,
        "session": scope.session if scope else None,
        "agent": agent,
        "context": context,
    }
    # Not validated again: the arguments come from parse_args, the names from the SDK and the gate, and the
    # queue refuses a call whose context is not JSON (InputLimits.call_problem) before judging it.
    return trusted(ToolCall, values)


def inspect_args(raw: str | None, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Parse the model's raw arguments and check them against the tool's schema; InvalidArgumentsError if not."""
    args = parse_args(raw if raw is not None else "")
    validate_args(args, schema)
    return args


class ApprovalPolicy:
    """The ``needs_approval`` callable of a gated tool: True exactly when the policy's verdict is ask."""

    def __init__(self, binding: GateBinding, agent: str, tool: FunctionTool) -> None:
        self.binding = binding
        self.agent = agent
        self.tool = tool.name
        self.schema = tool.params_json_schema

    async def __call__(self, run_context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        scope = current_scope()
        try:
            validate_args(params, self.schema)
            call = tool_call(self.tool, self.agent, params, call_id, scope)
        except (InvalidArgumentsError, ValueError):
            # Fail closed: the run pauses and Gate answers the model with what is wrong.
            return True
        try:
            verdict = self.binding.queue.evaluate(call)
        except StoreError as exc:
            keep_failure(exc)
            raise
        if verdict.kind is VerdictKind.ASK:
            return True
        if scope is not None:
            scope.judged[(self.agent, self.tool, call_id)] = Judged(call, verdict)
        return False


class GatedInvoker:
    """The ``on_invoke_tool`` of a gated tool; the only caller of the original tool body."""

    def __init__(self, binding: GateBinding, agent: str, tool: FunctionTool, original: ToolInvoker) -> None:
        self.binding = binding
        self.agent = agent
        self.tool = tool.name
        self.schema = tool.params_json_schema
        self.original = original
        self.is_agent_tool = bool(getattr(tool, "_is_agent_tool", False))
        self.gated = tool
        self.approval = ApprovalPolicy(binding, agent, tool)

    def bind(self, binding: GateBinding) -> None:
        """Consult ``binding``'s queue from now on, and let the SDK pause for the tool only if its policy may ask.

        A tool the policy can never ask about (see ``Policy.may_ask``) gets ``needs_approval=False``: the
        SDK calls no crossgate callable before running it, and the call is judged once, where it is invoked.
        (The SDK's own approval bookkeeping runs for every tool call either way, without crossgate too.)
        """
        self.binding = self.approval.binding = binding
        asks = binding.queue.policy.may_ask(self.tool, framework=FRAMEWORK, agent=self.agent)
        self.gated.needs_approval = self.approval if asks else False

    @property
    def pauses(self) -> bool:
        """True if the SDK asks this tool's ``needs_approval`` before running a call (the policy may ask)."""
        return self.gated.needs_approval is self.approval

    async def __call__(self, ctx: ToolContext[Any], raw: str) -> Any:
        try:
            return await self._invoke(ctx, raw)
        except StoreError as exc:
            # Nothing is run without the store: the error ends the run (see RunScope.failures).
            keep_failure(exc)
            raise

    async def _invoke(self, ctx: ToolContext[Any], raw: str) -> Any:
        queue = self.binding.queue
        scope = current_scope()
        call_id = ctx.tool_call_id
        judged = scope.judged.pop((self.agent, self.tool, call_id), None) if scope is not None else None
        try:
            args = parse_args(raw if raw is not None else "")
            if judged is None or not judged.fresh_for(args):
                judged = None
                check_args_schema(args, self.schema)
        except InvalidArgumentsError as exc:
            message = malformed_message(self.tool, exc)
            queue.record_outcome(
                None, ran=False, error=message, call=tool_call(self.tool, self.agent, {}, call_id, scope)
            )
            return message
        if judged is not None:
            # The SDK asked needs_approval about this very call, so it held no approval for it: no decision
            # of crossgate's applies, and the policy's verdict a moment ago stands.
            return await self._by_policy(ctx, raw, judged.call, judged.verdict)
        call = tool_call(self.tool, self.agent, args, call_id, scope)
        request = self._request(scope, call_id, read=self.pauses or (scope is not None and scope.resumed))
        if request is None:
            return await self._by_policy(ctx, raw, call)
        return await self._by_decision(ctx, raw, call, request)

    def _request(self, scope: RunScope | None, call_id: str, *, read: bool) -> ApprovalRequest | None:
        """The request of this call: one the gate just decided, else (``read``) the stored one.

        Not read for a tool the policy cannot ask about in a run started afresh: the SDK never paused for
        it in this run, so no request of this run can exist for it (only a resumed run's can).
        """
        if scope is None or not (read or scope.decided):
            return None
        request_id = openai_request_id(scope.run, self.agent, call_id)
        decided = scope.decided.pop(request_id, None)  # used once: a second invocation reads the stored request
        if decided is not None:
            return decided
        return find_request(self.binding.queue, request_id) if read else None

    async def _by_policy(self, ctx: ToolContext[Any], raw: str, call: ToolCall, verdict: Verdict | None = None) -> Any:
        queue = self.binding.queue
        scope = current_scope()
        submission = queue.submit(call, requested_by=scope.requested_by if scope else None, verdict=verdict)
        if submission.request is not None:
            # An ask with no crossgate decision: approved natively, or the policy changed mid-run.
            message = NOT_THROUGH_GATE.format(tool=self.tool)
            if not self.pauses:
                # The policy asks about a tool it could not ask about at install: pause for its next call.
                self.gated.needs_approval = self.approval
                message = ASKS_NOW.format(tool=self.tool)
            queue.cancel(submission.request.id, reason=message, actor=FRAMEWORK)
            queue.record_outcome(submission.request.id, ran=False, error=message)
            return message
        if submission.verdict.kind is VerdictKind.DENY:
            message = deny_message(self.tool, submission.verdict)
            queue.record_outcome(None, ran=False, result=message, call=call)
            return message
        return await self._execute(ctx, raw, None, call)

    async def _by_decision(self, ctx: ToolContext[Any], raw: str, call: ToolCall, request: ApprovalRequest) -> Any:
        queue = self.binding.queue
        if (
            self.is_agent_tool
            and request.status is RequestStatus.APPLIED
            and request.fingerprint == call.fingerprint
            and isinstance(request.resolution(), Approve | Edit)
            and _resumes_nested_run(ctx)
            and verified_queue(queue).check_applied(request, call.args)
        ):
            # An approved as_tool call is invoked again to continue its paused inner run; the inner
            # agent's own tools stay gated by their own requests.
            return await self._execute(ctx, raw, request, call)

        async def body(run_args: JsonObject) -> Any:
            # The model's own text for an approve; the reviewer's arguments for an edit.
            return await self.original(ctx, raw if run_args == call.args else json.dumps(run_args, ensure_ascii=False))

        # The request is found by the call id in the RunState, which the agent may rewrite: bind it to this tool.
        answer = await run_checked(queue, request, call.args, body, actor=FRAMEWORK, call=call, tool=self.tool)
        return answer.reply

    async def _execute(self, ctx: ToolContext[Any], raw: str, request: ApprovalRequest | None, call: ToolCall) -> Any:
        async def body(_args: JsonObject) -> Any:
            return await self.original(ctx, raw)

        answer = await run_recorded(self.binding.queue, request, call.args, body, call=call)
        return answer.result


def _resumes_nested_run(ctx: ToolContext[Any]) -> bool:
    """True if the SDK holds a paused inner run for this ``as_tool`` call (so this call continues it)."""
    try:
        from agents.agent_tool_state import get_agent_tool_state_scope, peek_agent_tool_run_result
    except ImportError:  # a private SDK module: without it, fail closed and refuse the re-entry
        return False
    if ctx.tool_call is None:
        return False
    pending = peek_agent_tool_run_result(ctx.tool_call, scope_id=get_agent_tool_state_scope(ctx))
    return pending is not None


def install(agent: Agent[Any], binding: GateBinding) -> list[Agent[Any]]:
    """Gate every function tool reachable from ``agent``; return the agents visited (starting agent first).

    Idempotent: tools gated before are re-bound to ``binding``. Raises ConfigurationError for tools crossgate
    cannot gate (local shell, computer, apply-patch, custom and MCP tools, and hosted tools the policy does
    not allow outright), so nothing the policy covers runs ungated.
    """
    visited: list[Agent[Any]] = []
    seen: set[int] = set()
    pending: list[Agent[Any]] = [agent]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        visited.append(current)
        if current.mcp_servers:
            raise ConfigurationError(
                f"agent {current.name!r} has MCP servers; their tools are listed at run time and crossgate "
                "cannot gate them yet"
            )
        current.tools = [_gate_tool(tool, current, binding) for tool in current.tools]
        pending.extend(inner for tool in current.tools if (inner := getattr(tool, "_agent_instance", None)) is not None)
        pending.extend(_handoff_target(h, current) for h in current.handoffs)
    return visited


def _gate_tool(tool: Any, agent: Agent[Any], binding: GateBinding) -> Any:
    if isinstance(tool, HOSTED_TOOLS):
        _check_hosted(tool, agent, binding.queue.policy)
        return tool
    if not isinstance(tool, FunctionTool):
        raise ConfigurationError(
            f"tool {getattr(tool, 'name', tool)!r} of agent {agent.name!r} is a {type(tool).__name__}; "
            "crossgate gates function tools only"
        )
    invoker = tool.on_invoke_tool
    if not isinstance(invoker, GatedInvoker):
        tool = copy.copy(tool)
        tool.on_invoke_tool = invoker = GatedInvoker(binding, agent.name, tool, tool.on_invoke_tool)
    invoker.bind(binding)
    return tool


def _check_hosted(tool: Any, agent: Agent[Any], policy: Policy) -> None:
    """Refuse a hosted tool unless the policy allows every call of it by ``agent`` outright.

    Its calls never reach crossgate, so a rule that would ask or deny them, or a default that is not
    allow, would be silently ignored. A rule's argument conditions are not consulted: crossgate never
    sees a hosted call's arguments, so such a rule may match any call.
    """
    found = policy.rules_for_tool(tool.name, framework=FRAMEWORK, agent=agent.name)
    for rule in found.rules:
        if rule.verdict is not VerdictKind.ALLOW:
            what = "denies" if rule.verdict is VerdictKind.DENY else "asks a person about"
            raise ConfigurationError(_hosted_refusal(tool, agent, f"policy rule {rule.name!r} {what} it"))
    if found.default_reachable and policy.default is not VerdictKind.ALLOW:
        why = f"no policy rule allows it outright, and the policy's default is {policy.default.value}"
        raise ConfigurationError(_hosted_refusal(tool, agent, why))


def _hosted_refusal(tool: Any, agent: Agent[Any], why: str) -> str:
    return (
        f"tool {tool.name!r} of agent {agent.name!r} is a {type(tool).__name__}, which the model provider runs "
        f"on its side: crossgate never sees its calls and cannot gate them, but {why}. Remove the tool, or "
        f"let it run ungated with a policy allow rule for {tool.name!r} and no ask or deny rule that matches it."
    )


def _handoff_target(handoff: Any, agent: Agent[Any]) -> Agent[Any]:
    if isinstance(handoff, Agent):
        return handoff
    if isinstance(handoff, Handoff):
        ref = getattr(handoff, "_agent_ref", None)
        target = ref() if ref is not None else None
        if isinstance(target, Agent):
            return target
    raise ConfigurationError(
        f"crossgate cannot reach the agent behind handoff {getattr(handoff, 'tool_name', handoff)!r} of "
        f"agent {agent.name!r}; build handoffs with handoff(agent) so the target's tools can be gated"
    )

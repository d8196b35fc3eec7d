"""The callbacks crossgate installs in one ``ClaudeAgentOptions``: PreToolUse, can_use_tool, PostToolUse,
PostToolUseFailure, SubagentStart and SubagentStop.

Order on the CLI side: PreToolUse hook, then (when the CLI's rules ask) ``can_use_tool``, then the tool.
The hook sees every call, including those an allow rule or a mode would approve, so it applies the
policy: deny, ask (forcing the call to ``can_use_tool``), or no objection. For a call the policy asks
about it creates the request and, unless the decision is already there, answers ``defer``: a pending
request never holds the CLI mid-call, so a crash while a reviewer thinks loses nothing. When the
session is resumed the CLI replays the hook and re-asks permission for the same ``tool_use_id``;
``can_use_tool`` then answers from the stored decision.

Subagents (CLI 2.1.332, verified; naming in ``_agents``): a call is named by the ``agent_type`` its
hook input carries, and ``can_use_tool`` takes the name the hook gave the same ``tool_use_id``. The CLI
drops a call deferred inside a subagent (at any depth: the subagent's turn just ends, and a resume finds
nothing to re-ask), and a call the main agent defers while a background subagent runs is lost when that
subagent finishes. Those calls are held inline instead: ``can_use_tool`` waits up to
``Gate.subagent_hold`` seconds for the decision. A main thread run as a named agent (``--agent``) defers
as usual: the CLI keeps its deferred call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from crossgate import (
    ApprovalRequest,
    FingerprintMismatchError,
    InvalidArgumentsError,
    ParkedRun,
    RequestQuery,
    RequestStatus,
    ToolCall,
    VerdictKind,
    fingerprint,
)
from crossgate.adapter import AdapterQueue, apply_decision, find_request
from crossgate.decisions import validate_args
from crossgate.model import JsonObject
from crossgate.queue import REQUESTED_BY
from crossgate.stores.base import MAX_PAGE_SIZE
from crossgate_claude._agents import SUBAGENT_TOOLS, UNKNOWN_AGENT, Agents, Caller, UnnamedCaller
from crossgate_claude._names import ToolName, UnknownServer, name_tool
from crossgate_claude._schemas import Schemas
from crossgate_claude._translate import (
    ASK_USER_QUESTION,
    FRAMEWORK,
    PermissionResult,
    answered_questions,
    capabilities,
    deny,
    hook_output,
    jsonable,
    request_id,
    session_rules,
    to_call,
)

if TYPE_CHECKING:
    from crossgate_claude._gate import Gate

log = logging.getLogger("crossgate_claude")

FAIL_CLOSED = "crossgate could not reach a decision for this tool call ({error}), so it was not run."
HELD_TOO_LONG = (
    "No reviewer answered within {seconds:g} seconds while this tool call was held, so it was not run. "
    "Do not retry it; tell the user it needs a person's approval."
)
ONE_DEFERRAL = (
    "Another tool call of this turn is already waiting for a person's review, so this call was not run yet. "
    "A person reviews this one too: make this same call again after that one is decided, and their decision "
    "applies to it."
)
QUEUED_BEHIND = "queued_behind"
"""Context key of a call refused for now because another call of its turn was deferred: that call's request.

The CLI keeps one deferred call per turn, so the others are stored as pending requests and refused; when
the model makes one again (a new ``tool_use_id``), it is matched to its request by run, agent and
fingerprint, and gets the decision made there."""
INVALID_ARGS = (
    "crossgate did not run {tool}: {error}. Nothing was executed. Call {tool} again with arguments that match "
    "its parameters."
)
QUEUED_DESCRIPTION = (
    "Made in the same turn as another call waiting for review; the model was told to make it again once "
    "that one is decided, and this decision applies then."
)
MISMATCH = "This tool call differs from the one the reviewer saw, so it was not run. Do not retry it."
HOLD_GRACE_SECONDS = 5.0
"""A held call's request expires this long after its hold ends (the hold itself cancels it first)."""
SESSION_ENDED = "The session ended while this tool call waited for review, so it was not run."


@dataclass
class Binding:
    """State shared by the callbacks of one options object (one CLI session, possibly resumed)."""

    gate: Gate
    agents: Agents
    defer: bool = True
    requested_by: str | None = None
    """Who the session acts for: every request it creates carries it, so that person cannot decide them."""
    context: JsonObject = field(default_factory=dict)
    """The app's context for every call (``Gate(context=)``, ``run(call_context=)``); parked with a deferred call."""
    session: str | None = None
    """The session being resumed, when known before the CLI reports it."""
    sessions: dict[str, str] = field(default_factory=dict)
    """tool_use_id -> session id, learnt from the hook (can_use_tool's context has no session id)."""
    parked: list[ParkedRun] = field(default_factory=list)
    """Parked runs this session's hook created, in order."""
    reasked: asyncio.Event = field(default_factory=asyncio.Event)
    expect: str | None = None
    """The deferred tool_use_id a resume waits to see re-asked."""
    callers: dict[str, Caller] = field(default_factory=dict)
    """tool_use_id -> who made it, as the hook saw it (can_use_tool's context has only ``agent_id``)."""
    servers: tuple[str, ...] = ()
    """The MCP servers the options configure, to name their tools (``_names``)."""
    names: dict[str, ToolName] = field(default_factory=dict)
    """tool_use_id -> its tool's name, as the hook saw it (can_use_tool is not told the MCP server)."""
    schemas: Schemas = field(default_factory=Schemas)
    """The argument schemas of the session's tools (``Gate(args_schemas=...)``, SDK MCP servers, built-ins)."""
    retries: dict[str, str] = field(default_factory=dict)
    """tool_use_id -> the request of the queued call it makes again (see ``QUEUED_BEHIND``)."""

    @property
    def queue(self) -> AdapterQueue:
        return self.gate.queue

    # PreToolUse ---------------------------------------------------------------------------------
    async def pre_tool_use(self, data: Any, tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        """Apply the policy to every call; a failure answers deny (the matcher also blocks on failure)."""
        data = dict(data)
        tool_use_id = tool_use_id or str(data.get("tool_use_id") or "")
        try:
            output = await self._pre_tool_use(data, tool_use_id)
        except Exception as exc:
            log.exception("crossgate PreToolUse hook failed; denying the call")
            output = hook_output("deny", FAIL_CLOSED.format(error=_short(exc)))
        caller, decision = self.callers.get(tool_use_id), _hook_decision(output)
        if data.get("tool_name") in SUBAGENT_TOOLS and caller is not None and decision != "deny":
            self.agents.launch(tool_use_id, caller, data.get("tool_input") or {}, allowed=decision in (None, "allow"))
        return output

    async def _pre_tool_use(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        session = str(data.get("session_id") or self.session or "") or None
        if session is not None and tool_use_id:
            self.sessions[tool_use_id] = session
        self._seen(tool_use_id)
        refusal = None
        try:
            caller: Caller | None = self.agents.of_hook(data)
        except UnnamedCaller as refused:
            caller, refusal = None, str(refused)
        name = self._name(tool_use_id, str(data.get("tool_name")), data.get("mcp_server"))
        if isinstance(name, str):
            refusal, name = refusal or name, ToolName(str(data.get("tool_name")), str(data.get("tool_name")))
        call = to_call(
            name,
            data.get("tool_input") or {},
            tool_use_id=tool_use_id,
            session=session,
            agent=caller.agent if caller else None,
            context={
                **self.context,
                REQUESTED_BY: self.requested_by,  # as the queue puts it, so this verdict and the request's agree
                "agent_id": data.get("agent_id"),
                **(self.agents.context(caller) if caller else {}),
                "permission_mode": data.get("permission_mode"),
                "cwd": data.get("cwd"),
            },
        )
        if caller is None or refusal is not None:
            self.queue.record_outcome(None, ran=False, result=refusal, call=call)
            return hook_output("deny", refusal)
        self.callers[tool_use_id] = caller
        invalid = self._invalid(call, name)
        if invalid is not None:
            self.queue.record_outcome(None, ran=False, error=invalid, call=call)
            return hook_output("deny", invalid)
        rid = self.retries.get(tool_use_id) or request_id(session, tool_use_id)
        existing = find_request(self.queue, rid)
        verdict = None
        if existing is None:
            verdict = self.queue.evaluate(call)
            queued = self._queued(session, tool_use_id, call) if verdict.kind is VerdictKind.ASK else None
            if queued is not None:
                rid, existing = queued.id, queued
        if existing is not None:
            if existing.fingerprint != call.fingerprint:
                # The CLI's session (which the agent can rewrite) names another tool or input for this id.
                self.queue.record_outcome(existing, ran=False, error=MISMATCH)
                return hook_output("deny", MISMATCH)
            if not existing.is_open:
                return hook_output("ask", existing.reason or "crossgate has a decision for this call")
        verdict = verdict or self.queue.evaluate(call)
        if verdict.kind is not VerdictKind.ASK and existing is None:
            # Recorded here, once: can_use_tool may not be consulted at all (allow rules, modes).
            verdict = self.queue.submit(call).verdict
            if verdict.kind is VerdictKind.DENY:
                return hook_output("deny", verdict.reason)
            if verdict.kind is VerdictKind.ALLOW:
                return {}
        if not self._may_defer(caller):
            return hook_output("ask", verdict.reason)  # can_use_tool holds it inline
        run = session or tool_use_id
        behind = next((p for p in self.parked if p.run == run), None)
        if behind is not None:
            return self._queue_behind(call, behind, rid, existing)
        # Held inline, the request is stored now so reviewers can answer while the hook waits; otherwise
        # it is stored together with its parked run, so nobody sees a request that cannot be resumed.
        submit = self.queue.submit if self.gate.hold else self.queue.prepare
        asked: dict[str, Any] = {
            "args_schema": self._schema(call, tool_use_id),
            "capabilities": capabilities(call.tool),
            "request_id": rid,
            "requested_by": self.requested_by,
        }
        submission = submit(call, **asked)
        if submission.request is None:
            return hook_output("deny", submission.verdict.reason) if submission.verdict.kind is VerdictKind.DENY else {}
        request = submission.request
        if request.is_open and self.gate.hold:
            request = await self._wait(rid, self.gate.hold)
        if not request.is_open:
            return hook_output("ask", request.reason)
        self.parked.append(self._park(call, request, stored=submission.stored, run=run, cwd=data.get("cwd")))
        return hook_output("defer", request.reason)

    def _park(self, call: ToolCall, request: ApprovalRequest, *, stored: bool, run: str, cwd: Any) -> ParkedRun:
        """Park the session on the call about to be deferred, with its request when that is not stored yet."""
        tool_use_id = call.call_id or ""
        state = {
            "session_id": call.session,
            "tool_use_id": tool_use_id,
            "tool": call.tool,
            "input": call.args,
            "cwd": cwd,
            "agent": self.agents.cli_agent,  # a resume runs the main thread as the same agent
            "request_id": request.id,  # a retried call's request is not the one its tool_use_id names
            "context": self.context,  # the app's context, for the calls of the resumed session
        }
        try:
            return self.queue.park(
                framework=FRAMEWORK,
                run=run,
                request_ids=[request.id],
                state=json.dumps(state, sort_keys=True),
                metadata={"tool_use_id": tool_use_id, "tool": call.tool, "requested_by": self.requested_by},
                new_requests=[] if stored else [request],
            )
        except Exception:
            # The call will be denied; a request nobody can resume must not stay pending.
            if stored:
                with contextlib.suppress(Exception):
                    self.queue.cancel(request.id, reason="crossgate could not park this call, so it was not run.")
            raise

    def _queue_behind(
        self, call: ToolCall, behind: ParkedRun, rid: str, existing: ApprovalRequest | None
    ) -> dict[str, Any]:
        """A call of a turn that has a deferred call already: stored as a pending request, and refused for now.

        The CLI keeps one deferred call per turn and drops the others from the session, so the model is
        asked to make it again once the deferred call is decided; the retry then gets this request's decision.
        """
        if existing is None:
            queued = call.model_copy(update={"context": {**call.context, QUEUED_BEHIND: behind.request_ids[0]}})
            self.queue.submit(
                queued,
                args_schema=self._schema(call, call.call_id or ""),
                description=QUEUED_DESCRIPTION,
                capabilities=capabilities(call.tool),
                request_id=rid,
                requested_by=self.requested_by,
            )
        return hook_output("deny", ONE_DEFERRAL)

    def _queued(self, session: str | None, tool_use_id: str, call: ToolCall) -> ApprovalRequest | None:
        """The queued request a call the model makes again matches (run, agent, fingerprint), if any."""
        if session is None:
            return None
        query = RequestQuery(
            statuses=(RequestStatus.PENDING, RequestStatus.DECIDED),
            framework=FRAMEWORK,
            tool=call.tool,
            run=session,
            newest_first=False,
            limit=MAX_PAGE_SIZE,
        )
        for request in self.queue.list_requests(query).items:
            if (
                QUEUED_BEHIND in request.call.context
                and request.fingerprint == call.fingerprint
                and request.call.agent == call.agent
                and request.id not in self.retries.values()
            ):
                self.retries[tool_use_id] = request.id
                return request
        return None

    # can_use_tool -------------------------------------------------------------------------------
    async def can_use_tool(self, tool: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        """Answer the CLI's permission request from the queue; any failure answers deny."""
        result: PermissionResult
        try:
            result = await self._can_use_tool(tool, args, context)
        except FingerprintMismatchError:
            result = deny(MISMATCH)
        except Exception as exc:
            log.exception("crossgate can_use_tool failed; denying the call")
            result = deny(FAIL_CLOSED.format(error=_short(exc)))
        if isinstance(result, PermissionResultDeny):
            self.agents.refused(context.tool_use_id or "")
        else:
            self.agents.allowed(context.tool_use_id or "")
        return result

    def _caller_of(self, tool_use_id: str, agent_id: str | None) -> Caller:
        """Who made the call can_use_tool is asked about: what the hook saw, else the subagent's known type."""
        known = self.callers.get(tool_use_id)
        if known is not None:
            if known.agent_id != agent_id:
                raise UnnamedCaller(UNKNOWN_AGENT)
            return known
        return self.agents.of_permission(agent_id)

    async def _can_use_tool(self, tool: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        tool_use_id = context.tool_use_id or ""
        self._seen(tool_use_id)
        session = self.sessions.get(tool_use_id) or self.session
        refusal = None
        try:
            caller: Caller | None = self._caller_of(tool_use_id, context.agent_id)
        except UnnamedCaller as refused:
            caller, refusal = None, str(refused)
        name = self._name(tool_use_id, tool)
        if isinstance(name, str):
            refusal, name = refusal or name, ToolName(tool, tool)
        call = to_call(
            name,
            args,
            tool_use_id=tool_use_id,
            session=session,
            agent=caller.agent if caller else None,
            context={
                **self.context,
                REQUESTED_BY: self.requested_by,
                "agent_id": context.agent_id,
                **(self.agents.context(caller) if caller else {}),
                "display_name": context.display_name,
                "title": context.title,
                "description": context.description,
                "blocked_path": context.blocked_path,
                "decision_reason": context.decision_reason,
                "suggestions": jsonable(context.suggestions) or None,
            },
        )
        if caller is None or refusal is not None:
            self.queue.record_outcome(None, ran=False, result=refusal, call=call)
            return deny(refusal or UNKNOWN_AGENT)
        rid = self.retries.get(tool_use_id) or request_id(session, tool_use_id)
        if find_request(self.queue, rid) is None:
            verdict = self.queue.evaluate(call)
            if verdict.kind is VerdictKind.ALLOW:
                return PermissionResultAllow()  # the hook recorded the policy's allow
            if verdict.kind is VerdictKind.DENY:
                return deny(self.queue.submit(call).verdict.reason)
        # A deferring gate only gets here with a pending request for calls it may not defer.
        hold = self.gate.subagent_hold if self.defer else self.gate.hold
        submission = self.queue.submit(
            call,
            args_schema=self._schema(call, tool_use_id),
            description=context.title or context.description,
            capabilities=capabilities(call.tool),
            request_id=rid,
            requested_by=self.requested_by,
            # A held call cannot be resumed by another process: if this one dies mid-hold, the request
            # expires soon after the hold instead of waiting for a decision nothing would apply.
            timeout_seconds=hold + HOLD_GRACE_SECONDS if hold is not None else None,
        )
        if submission.request is None:
            return (
                deny(submission.verdict.reason)
                if submission.verdict.kind is VerdictKind.DENY
                else PermissionResultAllow()
            )
        request = submission.request
        if request.is_open:
            request = await self._wait(rid, hold)
        if request.is_open:
            self.queue.cancel(rid, reason=HELD_TOO_LONG.format(seconds=hold or 0.0), actor="crossgate")
        return await self._answer(rid, call)

    async def _wait(self, rid: str, hold: float | None) -> ApprovalRequest:
        """Wait for a decision while the CLI is held; if the CLI or the client gives up, nothing runs."""
        try:
            return await self.queue.wait(rid, hold)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self.queue.cancel(rid, reason=SESSION_ENDED, actor="crossgate")
                self.queue.record_outcome(rid, ran=False, result=SESSION_ENDED)
            raise

    async def _answer(self, rid: str, call: ToolCall) -> PermissionResult:
        """The CLI's answer from the kit's check (which marks the decision applied, exactly once, before the
        CLI runs anything: a crash after this point runs nothing twice); the CLI runs the tool itself, and
        PostToolUse records its outcome."""
        request = self.queue.get(rid)
        applied = await apply_decision(self.queue, request, call.args, actor=FRAMEWORK, tool=call.tool)
        if applied.run:
            return PermissionResultAllow(
                updated_input=dict(applied.args or {}), updated_permissions=session_rules(request)
            )
        if applied.responded and request.call.tool == ASK_USER_QUESTION:
            # The CLI shows AskUserQuestion's answers to the model as the tool's result.
            return PermissionResultAllow(updated_input=answered_questions(request.call.args, applied.message))
        if applied.responded:  # the queue refuses respond for other tools (their capabilities); fail closed
            self.queue.record_outcome(request, ran=False, result=applied.message)
        return deny(applied.message)

    # PostToolUse --------------------------------------------------------------------------------
    async def post_tool_use(self, data: Any, tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        """Record what ran, and whether it ran with exactly the approved input."""
        self.agents.finished(tool_use_id or "")
        try:
            self._record_outcome(dict(data), tool_use_id or "")
        except Exception:
            log.exception("crossgate could not record a tool outcome")
        return {}

    async def post_tool_use_failure(self, data: Any, tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        """Record a reviewed call that ran and failed, with its error; a failed subagent launch leaves none running."""
        self.agents.failed(tool_use_id or "")
        try:
            self._record_outcome(dict(data), tool_use_id or "", failure=str(data.get("error") or "the tool failed"))
        except Exception:
            log.exception("crossgate could not record a tool failure")
        return {}

    # Subagents ----------------------------------------------------------------------------------
    async def subagent_start(self, data: Any, _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        """Note a running subagent invocation, its type, and who started it."""
        agent_id, agent_type = str(data.get("agent_id") or ""), str(data.get("agent_type") or "")
        if agent_id:
            self.agents.started(agent_id, agent_type)
        return {}

    async def subagent_stop(self, data: Any, _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        """Note that a subagent invocation finished."""
        self.agents.stopped(str(data.get("agent_id") or ""))
        return {}

    def _may_defer(self, caller: Caller) -> bool:
        """Whether a call may be deferred: never a subagent's, nor any while a subagent runs or starts."""
        return self.defer and caller.agent_id is None and not self.agents.live and not self.agents.launching

    def _record_outcome(self, data: dict[str, Any], tool_use_id: str, *, failure: str | None = None) -> None:
        session = str(data.get("session_id") or self.sessions.get(tool_use_id) or self.session or "") or None
        request = find_request(self.queue, self.retries.get(tool_use_id) or request_id(session, tool_use_id))
        if request is None:
            return
        name = self._name(tool_use_id, str(data.get("tool_name")), data.get("mcp_server"))
        tool = str(data.get("tool_name")) if isinstance(name, str) else name.tool
        ran_args = data.get("tool_input") or {}
        problems = [f"the tool failed: {failure}"] if failure is not None else []
        approved = request.approved_fingerprint()  # None for respond: AskUserQuestion runs with the answers added
        if approved is not None and approved != fingerprint(tool, ran_args):
            problems.append("the executed input is not the approved input")
            log.error("crossgate: the executed input is not the approved input for request %s", request.id)
        result = None if failure is not None else json.dumps(jsonable(data.get("tool_response")))[:2000]
        self.queue.record_outcome(request.id, ran=True, result=result, error="; ".join(problems) or None)

    def _invalid(self, call: ToolCall, name: ToolName) -> str | None:
        """What the model reads when the call's arguments fail its tool's schema (None when they pass)."""
        schema = self.schemas.to_validate(call.tool, name.server)
        try:
            validate_args(call.args, schema)
        except InvalidArgumentsError as exc:
            return INVALID_ARGS.format(tool=call.tool, error=exc)
        return None

    def _schema(self, call: ToolCall, tool_use_id: str) -> JsonObject | None:
        name = self.names.get(tool_use_id)
        return self.schemas.of(call.tool, name.server if name is not None else None)

    def _name(self, tool_use_id: str, claude_tool: str, reported: Any = None) -> ToolName | str:
        """The tool's neutral name (what the hook learnt for this call first), or why it cannot be named."""
        known = self.names.get(tool_use_id)
        if known is not None and known.claude == claude_tool:
            return known
        try:
            name = name_tool(claude_tool, self.servers, reported)
        except UnknownServer as unknown:
            return str(unknown)
        if tool_use_id:
            self.names[tool_use_id] = name
        return name

    def _seen(self, tool_use_id: str) -> None:
        if self.expect is not None and tool_use_id == self.expect:
            self.reasked.set()


def _hook_decision(output: dict[str, Any]) -> str | None:
    specific = output.get("hookSpecificOutput")
    return specific.get("permissionDecision") if isinstance(specific, dict) else None


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"

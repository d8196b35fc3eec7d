"""A tool-call wrapper for LangGraph's prebuilt ``ToolNode``, built on :func:`request_approval`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.graph import END
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, Send

from crossgate import Approve, Edit, InvalidArgumentsError, Reject, ToolCall
from crossgate.adapter import AdapterQueue, AuthorityPin, verified_queue
from crossgate.model import JsonObject
from crossgate_langgraph._approval import ask
from crossgate_langgraph._arguments import args_json_schema, refusal, tool_args

ToolResult = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], ToolResult]


def gated_tool_wrapper(
    queue: AdapterQueue,
    *,
    agent: str | None = None,
    context: JsonObject | None = None,
    framework: str = "langgraph",
    authority: AuthorityPin = None,
) -> Callable[[ToolCallRequest, Execute], ToolResult]:
    """A ``wrap_tool_call`` for ``ToolNode(tools, wrap_tool_call=...)`` that asks crossgate first.

    Policy allow runs the tool; deny returns the policy's reason as an error result; ask pauses the
    thread (one interrupt per gated call) until a person decides. Approve runs the call, edit runs it
    with the reviewer's arguments (same tool), reject returns the reviewer's message as an error
    result, respond returns the reviewer's content as the result. Use one tool call per ``ToolNode``
    task (``Send`` per call, as ``create_agent`` does) when several calls may pause in one turn.

    ``agent`` defaults to the name ``Gate`` runs the graph under (its ``name``); ``context`` (app
    context such as a tenant, which policy rules can test) is merged with ``Gate.run(context=...)``.
    ``authority`` pins the public key(s) decisions and standing rules are verified with, as
    ``Gate(authority=...)`` does (either one pins the queue object for both).
    """
    if authority is not None:
        verified_queue(queue, authority)  # pins this queue object for ask()

    def wrap(request: ToolCallRequest, execute: Execute) -> ToolResult:
        tool_call = request.tool_call
        call = ToolCall(
            framework=framework,
            tool=tool_call["name"],
            args={},
            call_id=tool_call.get("id"),
            agent=agent,
            context=dict(context or {}),
        )
        try:
            # Judged, fingerprinted and shown as the tool will receive them (its schema converts them).
            call = call.model_copy(update={"args": tool_args(request.tool, tool_call["args"])})
        except InvalidArgumentsError as exc:
            message = refusal(call.tool, exc)
            queue.record_outcome(None, ran=False, error=message, call=call)  # args left out: never judged
            return ToolMessage(content=message, name=call.tool, tool_call_id=call.call_id or "", status="error")
        decision, request_id = ask(queue, call, args_schema=args_json_schema(request.tool))
        if isinstance(decision, Approve | Edit):
            args = call.args
            if isinstance(decision, Edit):
                try:
                    # The edit passed the tool's JSON Schema; its own validators may still refuse it.
                    args = tool_args(request.tool, decision.args)
                except InvalidArgumentsError as exc:
                    message = f"crossgate could not apply the reviewer's edit of {call.tool}: {exc}. It did not run."
                    if request_id is not None:
                        queue.record_outcome(request_id, ran=False, error=message)
                    return ToolMessage(content=message, name=call.tool, tool_call_id=call.call_id or "", status="error")
            result = execute(request.override(tool_call={**tool_call, "args": dict(args)}))
            if request_id is not None:
                queue.record_outcome(request_id, ran=True, result=_text(result))
            return result
        # Not run: the kit's check recorded the outcome when it applied the decision.
        if isinstance(decision, Reject):
            return ToolMessage(
                content=decision.message, name=call.tool, tool_call_id=tool_call.get("id") or "", status="error"
            )
        return ToolMessage(content=decision.content, name=call.tool, tool_call_id=tool_call.get("id") or "")

    return wrap


def _text(result: ToolResult) -> str | None:
    if isinstance(result, ToolMessage):
        return result.content if isinstance(result.content, str) else str(result.content)
    return None


def tool_calls_router(tools_node: str = "tools", end: str = END) -> Callable[[Any], list[Send] | str]:
    """A conditional edge after the model node: one ``Send`` per unanswered tool call, else ``end``.

    Each gated call then pauses in its own task with its own interrupt id, parallel calls can be
    answered one at a time or all at once, and a resumed call never re-runs a sibling that finished.
    """

    def route(state: Any) -> list[Send] | str:
        messages: list[BaseMessage] = state["messages"] if isinstance(state, dict) else state.messages
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None or not last.tool_calls:
            return end
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        pending = [c for c in last.tool_calls if c.get("id") not in answered]
        return [Send(tools_node, [c]) for c in pending] or end

    return route

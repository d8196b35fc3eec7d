"""Identify the tool calls of a ``create_agent`` thread the same way at pause time and at run time."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from crossgate import AdapterError, ToolCall
from crossgate.adapter import request_id
from crossgate.model import JsonObject
from crossgate.queue import REQUESTED_BY

AGENT_FRAMEWORK = "langchain"
"""``ToolCall.framework`` of calls gated by the LangChain middleware (policy rules can target it)."""


def agent_request_id(thread: str, turn: int, call_id: str) -> str:
    """Request id of one model tool call: thread, model turn and the model's call id.

    The turn is part of it because scripted and some real models reuse call ids across turns, and a
    reused id must never find an earlier turn's decision.
    """
    return request_id("lc", "agent", thread, turn, call_id)


def turn_of(messages: Sequence[BaseMessage], call_id: str) -> tuple[int, AIMessage]:
    """The 1-based model turn whose AIMessage carries ``call_id`` (the latest one, if reused), and that message.

    Searched from the end (the call is nearly always in the latest model message), then the model
    messages before it counted.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and any(c.get("id") == call_id for c in message.tool_calls):
            return 1 + sum(isinstance(m, AIMessage) for m in islice(messages, index)), message
    raise AdapterError(f"no model message in the thread carries tool call {call_id!r}")


def last_tool_calls(messages: Sequence[BaseMessage]) -> tuple[int, list[dict[str, Any]]]:
    """The turn number and tool calls of the thread's latest AIMessage."""
    turn = sum(1 for m in messages if isinstance(m, AIMessage))
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is None:
        raise AdapterError("the thread has no model message to match the interrupt against")
    return turn, [dict(c) for c in last.tool_calls]


def agent_call(
    tool: str,
    args: Mapping[str, Any],
    *,
    call_id: str | None,
    thread: str,
    agent: str | None,
    context: JsonObject | None = None,
    requested_by: str | None = None,
) -> ToolCall:
    """The neutral call for one agent tool call; ``requested_by`` goes in its context, as the queue puts it."""
    extra: JsonObject = {REQUESTED_BY: requested_by} if requested_by is not None else {}
    return ToolCall(
        framework=AGENT_FRAMEWORK,
        tool=tool,
        args=dict(args),
        call_id=call_id,
        run=thread,
        agent=agent,
        context={**(context or {}), **extra},
    )


_JUDGED_KEPT = 4096
_judged: OrderedDict[str, ToolCall] = OrderedDict()
_judged_lock = threading.Lock()


def remember_judged(request_id: str, call: ToolCall) -> None:
    """Keep the call the middleware paused for, as it judged it (agent, context), for the gate to submit.

    The gate submits the paused calls after the graph returns, in the same process; it cannot see the
    middleware's own ``agent=`` and ``context=``, so it takes them from here. Only the latest few
    thousand are kept: a call not found is rebuilt from the gate's name and the run's context.
    """
    with _judged_lock:
        _judged[request_id] = call
        _judged.move_to_end(request_id)
        while len(_judged) > _JUDGED_KEPT:
            _judged.popitem(last=False)


def judged_call(request_id: str) -> ToolCall | None:
    """The call :func:`remember_judged` kept under ``request_id``, if any (taken once)."""
    with _judged_lock:
        return _judged.pop(request_id, None)

"""Identify the tool calls of a ``create_agent`` thread the same way at pause time and at run time."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from crossgate import AdapterError, ToolCall
from crossgate.adapter import request_id
from crossgate.model import JsonObject
from crossgate.queue import REQUESTED_BY

AGENT_FRAMEWORK = "langchain"
"""``ToolCall.framework`` of calls gated by the LangChain middleware (policy rules can target it)."""


def agent_request_id(thread: str, turn: int, call_id: str, graph_ns: str = "") -> str:
    """Request id of one model tool call: thread, model turn and the model's call id, and for an agent
    that runs inside another graph's task (a Deep Agents subagent), that enclosing namespace.

    The turn is part of it because scripted and some real models reuse call ids across turns, and a
    reused id must never find an earlier turn's decision; the namespace because a subagent shares its
    parent's thread and counts its own turns, so its first call could otherwise take the parent's id.
    """
    if graph_ns:
        return request_id("lc", "agent", thread, graph_ns, turn, call_id)
    return request_id("lc", "agent", thread, turn, call_id)


def graph_ns_of(config: Any) -> str:
    """The namespace of the agent graph a node of ``config`` runs in: ``""`` for the graph the gate runs.

    A node's ``checkpoint_ns`` ends with its own task (``tools:<task id>``), which differs between an
    agent's model step and tool step; what comes before it names the enclosing graphs' tasks (the
    parent's ``task`` call, for a subagent), the same for every step of that agent and on every resume.
    """
    ns = str(((config or {}).get("configurable") or {}).get("checkpoint_ns") or "")
    return ns.rpartition("|")[0]


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


@dataclass(frozen=True, slots=True)
class PausedCall:
    """A call the middleware paused for, as it judged it, kept for the gate that parks the thread.

    ``name`` and ``model_args`` are the call as the model sent it (what the interrupt shows);
    ``call`` is the neutral call with the arguments the tool will receive, and the agent and context
    it was judged for.
    """

    request_id: str
    call: ToolCall
    graph_ns: str
    turn: int
    name: str
    model_args: JsonObject
    args_schema: JsonObject | None


_JUDGED_KEPT = 4096
_judged: OrderedDict[str, PausedCall] = OrderedDict()
_judged_lock = threading.Lock()


def remember_judged(paused: PausedCall) -> None:
    """Keep a call the middleware paused for, for the gate to submit after the graph returns.

    The gate submits the paused calls in the same process; it cannot see the middleware's own
    ``agent=`` and ``context=``, nor the calls of an agent that runs inside a tool (a subagent's
    messages are not in the thread's state), so it takes them from here. Only the latest few thousand
    are kept: a call of the gate's own graph not found is rebuilt from the thread's messages; a
    subagent's is refused.
    """
    with _judged_lock:
        _judged[paused.request_id] = paused
        _judged.move_to_end(paused.request_id)
        while len(_judged) > _JUDGED_KEPT:
            _judged.popitem(last=False)


def judged_call(request_id: str) -> ToolCall | None:
    """The neutral call :func:`remember_judged` kept under ``request_id``, if any (taken once)."""
    with _judged_lock:
        paused = _judged.pop(request_id, None)
    return None if paused is None else paused.call


def paused_under(thread: str, task_ns: str) -> list[PausedCall]:
    """The kept calls of ``thread`` paused by agents running inside the task ``task_ns``, oldest first."""
    inside = task_ns + "|"
    with _judged_lock:
        return [
            p
            for p in _judged.values()
            if p.call.run == thread and (p.graph_ns == task_ns or p.graph_ns.startswith(inside))
        ]

"""What ``Gate`` keeps of a paused thread and the helpers it reads the thread with.

A parked LangGraph run stores the graph's name, the thread, the checkpoint it paused at and the
pending interrupts with the crossgate requests that answer them (``ParkState``), plus who the run acts
for and its app context (``Scope``, in the parked run's metadata).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import ValidationError

from crossgate import AdapterError, ParkedRun
from crossgate.model import JsonObject
from crossgate_langgraph._approval import REQUESTED_BY_KEY
from crossgate_langgraph._origin import AGENT_KEY, CONTEXT_KEY

Graph = Any
"""A compiled LangGraph graph (``CompiledStateGraph``, or ``create_agent``'s result)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """One pending interrupt and the crossgate requests that answer it (several for a batched one)."""

    id: str
    shape: str
    request_ids: list[str]
    tools: list[str]


@dataclass(frozen=True, slots=True)
class ParkState:
    graph: str
    thread: str
    checkpoint_id: str | None
    interrupts: list[Pending] = field(default_factory=list)

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> ParkState:
        data = json.loads(text)
        return cls(
            graph=data["graph"],
            thread=data["thread"],
            checkpoint_id=data["checkpoint_id"],
            interrupts=[Pending(**p) for p in data["interrupts"]],
        )


def thread_config(
    thread: str, requested_by: str | None = None, *, agent: str | None = None, context: JsonObject | None = None
) -> dict[str, Any]:
    """The LangGraph config of a thread, telling nodes who the run acts for, the agent's name and the app context."""
    configurable: dict[str, Any] = {"thread_id": thread}
    if requested_by is not None:
        configurable[REQUESTED_BY_KEY] = requested_by
    if agent is not None:
        configurable[AGENT_KEY] = agent
    if context:
        configurable[CONTEXT_KEY] = dict(context)
    return {"configurable": configurable}


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a run acts for and its app context: given to ``run``, parked with the thread, restored on resume."""

    requested_by: str | None
    context: JsonObject

    @classmethod
    def of(cls, parked: ParkedRun) -> Scope:
        acts_for, context = parked.metadata.get("requested_by"), parked.metadata.get("context")
        return cls(acts_for if isinstance(acts_for, str) else None, dict(context) if isinstance(context, dict) else {})


@dataclass(frozen=True, slots=True)
class Origin:
    """What the gate submits a paused agent call with: the graph's tools, the agent's name, the run's scope."""

    tools: Mapping[str, Any]
    agent: str
    scope: Scope


def refusal_text(error: Exception) -> str:
    """One line on why LangGraph refused an answer (the first pydantic error, where it has one)."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = "/".join(str(p) for p in first.get("loc", ()))
        return (
            f"LangGraph refused it ({where}: {first.get('msg', 'invalid')})"
            if where
            else f"LangGraph refused it ({first.get('msg')})"
        )
    return f"LangGraph refused it ({str(error).splitlines()[0] if str(error) else type(error).__name__})"


def tools_of(graph: Graph) -> Mapping[str, Any]:
    """The tools of a ``create_agent`` graph by name (its ``tools`` node is a ``ToolNode``); empty for others."""
    node = getattr(graph, "nodes", {}).get("tools")
    tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
    return tools if isinstance(tools, Mapping) else {}


async def descends(graph: Graph, config: Mapping[str, Any], checkpoint_id: str | None) -> bool:
    """True if the thread's latest checkpoint is ``checkpoint_id`` or a later one of the same history."""
    if checkpoint_id is None:
        return False
    async for snapshot in graph.aget_state_history(config):
        if snapshot.config["configurable"].get("checkpoint_id") == checkpoint_id:
            return True
    return False


def match_batched(value: Mapping[str, Any], calls: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], Any, Any]]:
    """Pair each batched action request with its tool call, in order (the batch lists no call ids)."""
    matched = []
    position = 0
    for action, config in zip(value["action_requests"], value["review_configs"], strict=True):
        while position < len(calls) and (calls[position]["name"], calls[position]["args"]) != (
            action["name"],
            action["args"],
        ):
            position += 1
        if position == len(calls):
            raise AdapterError(
                f"batched interrupt lists {action['name']} but neither the thread's latest model message nor a "
                "call crossgate's middleware paused in this process (a subagent's) has it; not parking it"
            )
        matched.append((calls[position], action.get("description"), config.get("allowed_decisions")))
        position += 1
    return matched

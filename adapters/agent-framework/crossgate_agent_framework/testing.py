"""A scripted chat client for testing agents behind crossgate offline, on the SDK's own chat-client interface.

``planned_client(plan, record=path)`` asks for the calls of ``plan[i]`` on its i-th turn and answers with
a final text once the plan is used up. It is a ``BaseChatClient`` with the SDK's ``FunctionInvocationLayer``
(what runs tools and middleware), so only the model's answers are scripted. It appends every tool result it
is sent to ``record`` (JSON lines), so a test in one process can read what the model was told in another:
``tool_results(path, tool)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_framework import BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message

__all__ = ["Call", "PlannedClient", "planned_client", "read_record", "tool_results"]

FINAL_TEXT = "Done."


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the model asks for: its tool, arguments and call id."""

    tool: str
    args: dict[str, Any]
    call_id: str


class PlannedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Makes the calls of ``plan[i]`` on turn i (counted from the conversation), then ends with ``FINAL_TEXT``."""

    def __init__(self, plan: Sequence[Sequence[Call]], record: Path | None = None) -> None:
        super().__init__()
        self.plan = [list(turn) for turn in plan]
        self.record = record

    async def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> ChatResponse[Any]:
        if self.record is not None:
            _append(self.record, messages)
        turn = sum(any(c.type == "function_call" for c in m.contents) for m in messages if m.role == "assistant")
        if turn < len(self.plan):
            calls = [
                Content.from_function_call(call_id=c.call_id, name=c.tool, arguments=c.args) for c in self.plan[turn]
            ]
            return ChatResponse(messages=[Message(role="assistant", contents=calls)], response_id=f"turn-{turn}")
        return ChatResponse(messages=[Message(role="assistant", contents=[FINAL_TEXT])], response_id="final")


def planned_client(plan: Sequence[Sequence[Call]], *, record: Path | None = None) -> PlannedClient:
    """A :class:`PlannedClient` for ``plan``, recording what it is told to ``record``."""
    return PlannedClient(plan, record)


def _append(record: Path, messages: Sequence[Message]) -> None:
    """Record the tool results sent since the model's last turn (the SDK may send them in several messages)."""
    names = {c.call_id: c.name for m in messages for c in m.contents if c.type == "function_call"}
    last_turn = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    lines = [
        {"tool": names.get(c.call_id), "call_id": c.call_id, "content": _text(c.result)}
        for m in messages[last_turn + 1 :]
        for c in m.contents
        if c.type == "function_result"
    ]
    with record.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def _text(result: Any) -> str:
    if isinstance(result, list):
        return " ".join(c.text if isinstance(c, Content) and c.text is not None else str(c) for c in result)
    return result if isinstance(result, str) else json.dumps(result, default=str)


def read_record(record: Path) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order, from ``record``."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]


def tool_results(record: Path, tool: str) -> list[str]:
    """What the model was told for each call of ``tool``, in order."""
    return [line["content"] for line in read_record(record) if line["tool"] == tool]

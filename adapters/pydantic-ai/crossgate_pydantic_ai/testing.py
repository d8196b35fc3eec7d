"""Scripted models for testing agents behind crossgate offline, on Pydantic AI's own ``FunctionModel``.

``planned_model(plan, record=path)`` asks for the calls of ``plan[i]`` on its i-th turn and answers with
a final text once the plan is used up. It appends every tool result it is sent to ``record`` (JSON lines),
so a test in one process can read what the model was told in another: ``tool_results(path, tool)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["Call", "planned_model", "read_record", "tool_results"]

FINAL_TEXT = "Done."


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the model asks for: ``args`` as JSON text (what real providers send), and its call id."""

    tool: str
    args: str
    call_id: str


def planned_model(plan: Sequence[Sequence[Call]], *, record: Path | None = None) -> FunctionModel:
    """A ``FunctionModel`` that makes the calls of ``plan[i]`` on turn i, then ends with ``FINAL_TEXT``."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if record is not None and isinstance(last, ModelRequest):
            _append(record, last)
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(plan):
            return ModelResponse(parts=[ToolCallPart(c.tool, c.args, tool_call_id=c.call_id) for c in plan[turn]])
        return ModelResponse(parts=[TextPart(FINAL_TEXT)])

    return FunctionModel(respond)


def _append(record: Path, request: ModelRequest) -> None:
    lines: list[dict[str, Any]] = []
    for part in request.parts:
        if part.part_kind == "tool-return":
            content = part.content if isinstance(part.content, str) else json.dumps(part.content, default=str)
            lines.append({"tool": part.tool_name, "call_id": part.tool_call_id, "content": content})
        elif part.part_kind == "retry-prompt":
            lines.append({"tool": part.tool_name, "call_id": part.tool_call_id, "content": part.model_response()})
    with record.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def read_record(record: Path) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order, from ``record``."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]


def tool_results(record: Path, tool: str) -> list[str]:
    """What the model was told for each call of ``tool``, in order."""
    return [line["content"] for line in read_record(record) if line["tool"] == tool]

"""A scripted model for testing ADK agents behind crossgate offline, on ADK's own model interface (``BaseLlm``).

``planned_llm(plan, record=path)`` asks for the calls of ``plan[i]`` on its i-th turn and answers with a
final text once the plan is used up; ADK runs the tools, callbacks and plugins as it would for a hosted
model. It appends every tool result it is sent to ``record`` (JSON lines), so a test in one process can read
what the model was told in another: ``tool_results(path, tool)``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

__all__ = ["Call", "PlannedLlm", "planned_llm", "read_record", "tool_results"]

FINAL_TEXT = "Done."


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the model asks for: its tool, arguments and call id."""

    tool: str
    args: dict[str, Any]
    call_id: str


class PlannedLlm(BaseLlm):
    """Makes the calls of ``plan[i]`` on turn i (counted from the conversation), then ends with ``FINAL_TEXT``."""

    model: str = "planned"
    plan: list[list[Call]] = Field(default_factory=list)
    record: Path | None = None

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        if self.record is not None:
            _append(self.record, contents)
        turn = sum(any(p.function_call for p in c.parts or []) for c in contents if c.role == "model")
        if turn < len(self.plan):
            parts = [
                types.Part(function_call=types.FunctionCall(id=c.call_id, name=c.tool, args=c.args))
                for c in self.plan[turn]
            ]
        else:
            parts = [types.Part(text=FINAL_TEXT)]
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=0, candidates_token_count=0)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def planned_llm(plan: Sequence[Sequence[Call]], *, record: Path | None = None) -> PlannedLlm:
    """A :class:`PlannedLlm` for ``plan``, recording what it is told to ``record``."""
    return PlannedLlm(plan=[list(turn) for turn in plan], record=record)


def _append(record: Path, contents: Sequence[types.Content]) -> None:
    """Record the tool results sent since the model's last turn."""
    last_turn = max((i for i, c in enumerate(contents) if c.role == "model"), default=-1)
    lines = [
        {"tool": p.function_response.name, "call_id": p.function_response.id, "content": text(p.function_response)}
        for c in contents[last_turn + 1 :]
        for p in c.parts or []
        if p.function_response is not None
    ]
    with record.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def text(response: types.FunctionResponse) -> str:
    """What a tool result says: ADK's ``{"result": ...}`` wrapper unwrapped, anything else as JSON."""
    body = response.response or {}
    value = body["result"] if set(body) == {"result"} else body
    return value if isinstance(value, str) else json.dumps(value, default=str)


def read_record(record: Path) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order, from ``record``."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]


def tool_results(record: Path, tool: str) -> list[str]:
    """What the model was told for each call of ``tool``, in order."""
    return [line["content"] for line in read_record(record) if line["tool"] == tool]

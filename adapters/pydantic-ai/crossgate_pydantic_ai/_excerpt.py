"""The run excerpt of a Pydantic AI run that paused: its prompt, the model's texts, the calls that returned."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from crossgate.adapter import run_excerpt
from crossgate.model import RunExcerpt


def excerpt_of(history: Sequence[ModelMessage]) -> RunExcerpt | None:
    """What the run did before it paused, from its message history."""
    returned = {
        part.tool_call_id: str(part.content)
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    asked: str | None = None
    said: list[str] = []
    calls: list[str] = []
    for message in history:
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                asked = part.content
            elif isinstance(part, TextPart) and isinstance(message, ModelResponse):
                said.append(part.content)
            elif isinstance(part, ToolCallPart) and part.tool_call_id in returned:
                arguments = part.args if isinstance(part.args, str) else json.dumps(part.args or {}, ensure_ascii=False)
                calls.append(f"{part.tool_name} {arguments} → {returned[part.tool_call_id]}")
    return run_excerpt(user_request=asked, messages=said, calls=calls)

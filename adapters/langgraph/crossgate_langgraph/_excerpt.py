"""The run excerpt of a paused LangGraph thread: from its ``messages`` (an agent's), else nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from crossgate.adapter import run_excerpt
from crossgate.model import RunExcerpt


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def excerpt_of(values: Any) -> RunExcerpt | None:
    """What the thread did before it paused: its last user message, the model's messages and the calls that ran.

    A graph whose state has no ``messages`` list (a plain graph's own state) has no excerpt.
    """
    messages = values.get("messages") if isinstance(values, Mapping) else None
    if not isinstance(messages, list):
        return None
    results = {m.tool_call_id: _text(m) for m in messages if isinstance(m, ToolMessage)}
    said, calls, asked = [], [], None
    for message in messages:
        if isinstance(message, HumanMessage):
            asked = _text(message)
        elif isinstance(message, AIMessage):
            if _text(message).strip():
                said.append(_text(message))
            for call in message.tool_calls:
                result = results.get(call.get("id") or "")
                if result is not None:  # it ran: its result came back
                    arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
                    calls.append(f"{call['name']} {arguments} → {result}")
    return run_excerpt(user_request=asked, messages=said, calls=calls)

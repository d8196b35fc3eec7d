"""The run excerpt of an OpenAI Agents SDK run that paused: its input, the model's messages, the calls that ran."""

from __future__ import annotations

from typing import Any

from agents import ItemHelpers, MessageOutputItem, RunResult, RunResultStreaming, ToolCallItem, ToolCallOutputItem

from crossgate.adapter import run_excerpt
from crossgate.model import RunExcerpt


def _user_request(given: str | list[Any]) -> str | None:
    """The run's input as text: the string given, else the last user message's text."""
    if isinstance(given, str):
        return given
    for item in reversed(given):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
                return " ".join(texts) or None
    return None


def excerpt_of(result: RunResult | RunResultStreaming) -> RunExcerpt | None:
    """What ``result``'s run did before it paused; the calls that ran are those with an output item."""
    outputs = {item.call_id: item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)}
    messages = [ItemHelpers.text_message_output(i) for i in result.new_items if isinstance(i, MessageOutputItem)]
    calls = []
    for item in result.new_items:
        if not isinstance(item, ToolCallItem):
            continue
        call_id = getattr(item.raw_item, "call_id", None)
        if call_id in outputs:
            name, arguments = getattr(item.raw_item, "name", "?"), getattr(item.raw_item, "arguments", "")
            calls.append(f"{name} {arguments} → {outputs[call_id]}")
    return run_excerpt(user_request=_user_request(result.input), messages=messages, calls=calls)

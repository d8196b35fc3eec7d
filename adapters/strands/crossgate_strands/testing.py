"""A scripted model for testing Strands agents behind crossgate offline, on Strands' own ``Model`` interface.

``planned_model(plan, record=path)`` asks for the calls of ``plan[i]`` on its i-th turn and answers with a
final text once the plan is used up; Strands runs the tools, hooks and interrupts as it would for a hosted
model. It appends every tool result it is sent to ``record`` (JSON lines), so a test in one process can read
what the model was told in another: ``tool_results(path, tool)``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

__all__ = ["Call", "PlannedModel", "planned_model", "read_record", "tool_results"]

FINAL_TEXT = "Done."


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the model asks for: its tool, arguments and call id (Strands' ``toolUseId``)."""

    tool: str
    args: dict[str, Any]
    call_id: str


class PlannedModel(Model):
    """Makes the calls of ``plan[i]`` on turn i (counted from the conversation), then ends with ``FINAL_TEXT``."""

    def __init__(self, plan: Sequence[Sequence[Call]], *, record: Path | None = None) -> None:
        self.plan = [list(turn) for turn in plan]
        self.record = record

    def update_config(self, **model_config: Any) -> None:
        """Nothing to configure."""

    def get_config(self) -> dict[str, Any]:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the planned model makes tool calls and texts only")

    def stream(
        self, messages: Messages, tool_specs: list[ToolSpec] | None = None, system_prompt: str | None = None, **_: Any
    ) -> AsyncIterable[StreamEvent]:
        if self.record is not None:
            _append(self.record, messages)
        turn = sum(1 for m in messages if m["role"] == "assistant" and any("toolUse" in c for c in m["content"]))
        calls = self.plan[turn] if turn < len(self.plan) else []
        return _events(calls)


async def _events(calls: Sequence[Call]) -> AsyncGenerator[StreamEvent, None]:
    yield {"messageStart": {"role": "assistant"}}
    for call in calls:
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": call.call_id, "name": call.tool}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.args)}}}}
        yield {"contentBlockStop": {}}
    if not calls:
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": FINAL_TEXT}}}
        yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}}


def planned_model(plan: Sequence[Sequence[Call]], *, record: Path | None = None) -> PlannedModel:
    """A :class:`PlannedModel` for ``plan``, recording what it is told to ``record``."""
    return PlannedModel(plan, record=record)


def _append(record: Path, messages: Messages) -> None:
    """Record the tool results sent since the model's last turn."""
    last_turn = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    names = {c["toolUse"]["toolUseId"]: c["toolUse"]["name"] for m in messages for c in m["content"] if "toolUse" in c}
    lines = [
        {
            "tool": names.get(c["toolResult"]["toolUseId"], ""),
            "call_id": c["toolResult"]["toolUseId"],
            "status": c["toolResult"]["status"],
            "content": " ".join(str(b.get("text", b)) for b in c["toolResult"]["content"]),
        }
        for m in messages[last_turn + 1 :]
        for c in m["content"]
        if "toolResult" in c
    ]
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

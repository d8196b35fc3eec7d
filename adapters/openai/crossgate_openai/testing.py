"""A scripted model for offline tests and examples: tool calls from a plan, no network, inputs recorded.

``PlannedModel`` is a real ``agents.models.interface.Model``: the SDK drives it exactly as it drives a
hosted model (tool schemas, approvals, ``RunState``, streaming). It decides its next output from the
input alone, so a fresh model in another process continues a resumed run where the first one stopped:
it emits the first planned turn whose calls have no ``function_call_output`` yet, then a final message.

    from agents import set_tracing_disabled
    from crossgate_openai.testing import PlannedModel, tool_call

    set_tracing_disabled(True)  # offline: no trace export
    model = PlannedModel([[tool_call("delete_ticket", {"id": "t3"})]], final="Deleted.")
    agent = Agent(name="Triage", tools=[delete_ticket], model=model)

``import crossgate_openai`` does not load this module.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import ModelResponse, Usage
from agents.models.interface import Model
from agents.testing.model import assistant_message, function_call
from openai.types.responses import Response, ResponseCompletedEvent

__all__ = ["Call", "PlannedModel", "outputs_by_call", "read_record", "tool_call", "tool_results"]


@dataclass(frozen=True, slots=True)
class Call:
    """One planned tool call: name, raw arguments text as the model sends it, call id."""

    name: str
    arguments: str
    call_id: str


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> Call:
    """A planned call of ``name`` with ``args``; the call id defaults to ``call_<name>``."""
    return Call(name, json.dumps(args), call_id or f"call_{name}")


def plain(item: Any) -> dict[str, Any]:
    """An input item as plain JSON data (the SDK passes dicts or pydantic models)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_none=True)
    data: dict[str, Any] = json.loads(json.dumps(item, default=str))
    return data


class PlannedModel(Model):
    """Emit each planned turn until all its calls are answered in the input; then ``final``.

    Every input is kept in ``inputs`` and, with ``record``, appended to a JSON-lines file, for tests
    whose resume runs in another process (``read_record``).
    """

    def __init__(self, turns: Sequence[Sequence[Call]], *, final: str = "done", record: Path | None = None) -> None:
        self.turns = [list(turn) for turn in turns]
        self.final = final
        self.record = record
        self.inputs: list[list[dict[str, Any]]] = []

    def _observe(self, input: str | list[Any]) -> list[dict[str, Any]]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else [plain(i) for i in input]
        self.inputs.append(items)
        if self.record is not None:
            with self.record.open("a", encoding="utf-8") as out:
                out.write(json.dumps(items) + "\n")
        return items

    def _next_output(self, items: list[dict[str, Any]]) -> list[Any]:
        answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
        for turn in self.turns:
            if not all(call.call_id in answered for call in turn):
                return [function_call(c.name, c.arguments, call_id=c.call_id) for c in turn]
        return [assistant_message(self.final)]

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
    ) -> ModelResponse:
        output = self._next_output(self._observe(input))
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
    ) -> AsyncIterator[Any]:
        output = self._next_output(self._observe(input))
        response = Response(
            id="resp_scripted",
            created_at=0,
            model="scripted",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=True,
            status="completed",
            usage=None,
        )
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)


def outputs_by_call(inputs: Sequence[Sequence[dict[str, Any]]]) -> dict[str, str]:
    """call id -> the output text the model received for it, over every recorded input."""
    outputs: dict[str, str] = {}
    for items in inputs:
        for item in items:
            if item.get("type") == "function_call_output":
                output = item.get("output")
                outputs[str(item["call_id"])] = output if isinstance(output, str) else json.dumps(output)
    return outputs


def tool_results(inputs: Sequence[Sequence[dict[str, Any]]], tool: str) -> list[str]:
    """What the model was told for each call of ``tool``, in the order the model made the calls."""
    order: list[str] = []
    for items in inputs:
        for item in items:
            if item.get("type") == "function_call" and item.get("name") == tool and item["call_id"] not in order:
                order.append(str(item["call_id"]))
    outputs = outputs_by_call(inputs)
    return [outputs[c] for c in order if c in outputs]


def read_record(path: Path) -> list[list[dict[str, Any]]]:
    """The inputs a ``PlannedModel`` recorded to ``path`` (possibly from several processes)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

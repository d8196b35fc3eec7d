"""A scripted chat model for tests and examples: tool calls from a script, no network, inputs recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.config import get_config
from pydantic import ConfigDict, Field

Reply = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """Answers the n-th model turn of a thread with ``turns[n]`` (or ``reply(messages)``), then ``final``.

    The turn is counted from the AI messages in the input, so the same script gives the same answer
    in any process that resumes the thread. Every input is kept in ``received`` and, with
    ``record_to``, appended to a JSON-lines file with the thread id, for other processes to read.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    turns: list[AIMessage] = Field(default_factory=list)
    reply: Reply | None = None
    final: str = "Done."
    record_to: Path | None = None
    received: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "crossgate-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        """Tools are in the script already; binding changes nothing."""
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        if self.record_to is not None:
            line = {"thread": _thread(), "messages": messages_to_dict(messages)}
            with self.record_to.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        answer = self._answer(messages)
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def _answer(self, messages: Sequence[BaseMessage]) -> AIMessage:
        if self.reply is not None:
            return self.reply(messages)
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        if turn < len(self.turns):
            return self.turns[turn].model_copy(deep=True)
        return AIMessage(content=self.final)


def recorded_inputs(path: Path, thread: str | None = None) -> list[list[BaseMessage]]:
    """Every input a ``ScriptedChatModel(record_to=path)`` received (for one thread), in order."""
    if not path.exists():
        return []
    inputs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if thread is None or data["thread"] == thread:
            inputs.append(messages_from_dict(data["messages"]))
    return inputs


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """One tool call for a scripted ``AIMessage(tool_calls=[...])``."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _thread() -> str | None:
    try:
        thread = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:
        return None
    return None if thread is None else str(thread)

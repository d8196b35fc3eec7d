"""A decision the SDK refuses at resume ends that call as refused, tells the model, and the run goes on.

An edit can pass the request's JSON Schema yet fail the tool's own pydantic validation (a custom
validator the schema cannot express). LangGraph's middleware then refuses the answer at resume
(issue 12). Real ``create_agent`` agents with crossgate's middleware, and a ``ToolNode`` graph.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import AfterValidator

from crossgate import Edit, MemoryStore, ParkedRunStatus, Policy, PolicyRule, RequestStatus, ReviewQueue, VerdictKind
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from tests.adapters.langgraph.test_coerced_args import build


def relative(path: str) -> str:
    if path.startswith("/"):
        raise ValueError("paths must be relative to the workspace")
    return path


class Files:
    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def tool(self) -> BaseTool:
        def write_file(path: Annotated[str, AfterValidator(relative)], content: str) -> str:
            """Write a file in the workspace."""
            self.ran.append({"path": path, "content": content})
            return f"wrote {path}"

        return StructuredTool.from_function(write_file)


@pytest.mark.parametrize("kind", ["create_agent", "toolnode"])
async def test_an_edit_the_tool_refuses_at_resume_ends_the_call_and_the_run_goes_on(saver, kind: str) -> None:
    queue = ReviewQueue(
        MemoryStore(), Policy(rules=(PolicyRule(name="w", verdict=VerdictKind.ASK, tool="write_file"),))
    )
    files = Files()
    write = tool_call("write_file", {"path": "notes.txt", "content": "hi"}, "call_w")
    model = ScriptedChatModel(turns=[AIMessage(content="", tool_calls=[write])], final="Done.")
    graph = build(kind, queue, files.tool(), model, saver)
    gate = Gate(queue, graph)
    parked = await gate.run(graph, {"messages": [("user", "write it")]}, thread="t")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    # The JSON Schema cannot say "relative": the queue accepts the edit; the tool's validator refuses it.
    queue.decide(request_id, Edit(args={"path": "/etc/passwd", "content": "hi"}), reviewer="ann")

    done = await gate.resume(parked.parked_run)
    assert isinstance(done, Finished), "the run goes on"
    assert files.ran == []
    [message] = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert message.status == "error"
    assert "write_file" in str(message.content) and "relative" in str(message.content)
    request = queue.get(request_id)
    assert request.status is RequestStatus.APPLIED, "the decision is used up: nothing is left half-applied"
    outcome = queue.outcome(request_id)
    assert outcome is not None and outcome.payload["ran"] is False
    assert "relative" in str(outcome.payload["error"] or outcome.payload["result"])
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED

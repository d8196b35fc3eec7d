"""A LangChain agent whose tool calls go through crossgate's review queue (HumanInTheLoopMiddleware underneath).

    python examples/langchain_agent.py

Offline: a scripted chat model proposes three calls in one turn. The policy lets ``read_data`` run,
sends ``write_file`` and ``execute_sql`` to a person (SQL: approve or reject only), and denies any
``DROP``. The reviewer edits the file path and rejects the SQL with an instruction; the model's next
input shows what it was told.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from crossgate import DecisionKind, Edit, MemoryStore, Policy, PolicyRule, Reject, ReviewQueue, VerdictKind
from crossgate.authority import Authority  # signs in this process; its gates verify with it
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware
from crossgate_langgraph.testing import ScriptedChatModel, tool_call

POLICY = Policy(
    rules=(
        PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_data"),
        PolicyRule(
            name="no-drop",
            verdict=VerdictKind.DENY,
            tool="execute_sql",
            where=({"arg": "query", "kind": "regex", "pattern": "(?i)^drop "},),
            reason="Dropping tables is forbidden; ask a DBA.",
        ),
        PolicyRule(
            name="sql",
            verdict=VerdictKind.ASK,
            tool="execute_sql",
            allowed_decisions=(DecisionKind.APPROVE, DecisionKind.REJECT),
            reason="SQL statements need DBA approval",
        ),
        PolicyRule(name="writes", verdict=VerdictKind.ASK, tool="write_file", reason="Writing files needs review"),
    )
)


@tool
def write_file(path: str, content: str) -> str:
    """Write content to a file."""
    return f"wrote {len(content)} bytes to {path}"


@tool
def execute_sql(query: str) -> str:
    """Run one SQL statement."""
    return "1 row affected"


@tool
def read_data(table: str) -> str:
    """Read rows from a table."""
    return f"3 rows from {table}"


async def demo() -> dict[str, Any]:
    queue = ReviewQueue(MemoryStore(), POLICY, authority=Authority.generate())
    tools = [write_file, execute_sql, read_data]
    model = ScriptedChatModel(
        turns=[
            AIMessage(
                content="",
                tool_calls=[
                    tool_call("write_file", {"path": "report.txt", "content": "hello"}, "call_write"),
                    tool_call("execute_sql", {"query": "DELETE FROM users"}, "call_sql"),
                    tool_call("read_data", {"table": "users"}, "call_read"),
                ],
            )
        ],
        final="Report archived; user cleanup left for later.",
    )
    agent = create_agent(
        model,
        tools,
        middleware=crossgate_middleware(queue, tools, interrupt_mode="per_call"),
        checkpointer=InMemorySaver(),
        name="ops-agent",
    )
    gate = Gate(queue, agent)
    try:
        parked = await gate.run(agent, {"messages": [("user", "Archive the report, clean up users.")]}, thread="ops-1")
        assert isinstance(parked, Parked)
        for request in queue.pending():
            allowed = ", ".join(k.value for k in request.allowed_decisions)
            print(f"review {request.call.tool} {request.call.args} ({request.reason}; allowed: {allowed})")
            if request.call.tool == "write_file":
                queue.decide(request.id, Edit(args={"path": "archive/report.txt", "content": "hello"}), reviewer="ann")
            else:
                queue.decide(request.id, Reject(message="Never delete users; archive them instead."), reviewer="ann")
        done = await gate.resume(parked.parked_run)
        assert isinstance(done, Finished)
        told = {m.name: str(m.content) for m in model.received[-1] if isinstance(m, ToolMessage)}
        for name, content in told.items():
            print(f"model was told for {name}: {content.splitlines()[-1]}")
        print(f"final answer: {done.result['messages'][-1].content}")
        return {"told": told, "final": done.result["messages"][-1].content}
    finally:
        queue.close()


def main() -> dict[str, Any]:
    """Run the demo; return what the model was told."""
    return asyncio.run(demo())


if __name__ == "__main__":
    main()

"""A newcomer's first gated call, run by a clean virtual environment's python (only crossgate installed).

    python first_call.py SDK start DIR    # run the agent: one delete_ticket call, parked; prints the request id
    python first_call.py SDK resume DIR   # after `crossgate --db DIR/crossgate.db approve ID`: resume it

SDK is openai, claude, langgraph, agent-framework, google-adk or strands. DIR holds the queue, the policy and the tool's
record of what ran.
Each line printed is JSON. Standard library and the installed distributions only: no test package.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from crossgate import ReviewQueue, open_store
from crossgate.policy import load_policy
from crossgate.runs import Finished, Parked

POLICY = "version: 1\ndefault: allow\nrules:\n  - name: ask-deletes\n    verdict: ask\n    tool: delete_ticket\n"


def queue_in(folder: Path) -> ReviewQueue:
    policy = folder / "policy.yaml"
    if not policy.exists():
        policy.write_text(POLICY, encoding="utf-8")
    return ReviewQueue(open_store(str(folder / "crossgate.db")), load_policy(str(policy)))


def delete(folder: Path, ticket: str) -> str:
    with (folder / "ran.txt").open("a", encoding="utf-8") as out:
        out.write(ticket + "\n")
    return f"deleted {ticket}"


async def openai(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from agents import Agent, function_tool, set_tracing_disabled

    from crossgate_openai import Gate
    from crossgate_openai.testing import PlannedModel, tool_call

    set_tracing_disabled(True)

    @function_tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return delete(folder, id)

    model = PlannedModel([[tool_call("delete_ticket", {"id": "t3"})]], final="Deleted t3.")
    agent = Agent(name="Triage", tools=[delete_ticket], model=model)
    if parked_run is None:
        return await Gate(queue).run(agent, "Delete the spam ticket t3")
    return await Gate(queue, sdk_agent=agent).resume(parked_run)


async def claude(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

    from crossgate_claude import Gate
    from crossgate_claude.testing import MessagesAPI, cli_env

    @tool("delete_ticket", "Delete a ticket by id.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": delete(folder, str(args["id"]))}]}

    with MessagesAPI() as api:
        options = ClaudeAgentOptions(
            mcp_servers={"tickets": create_sdk_mcp_server("tickets", tools=[delete_ticket])},
            tools=[],
            setting_sources=[],
            cwd=str(folder),
            env=cli_env(api.base_url, folder / "cli"),
        )
        gate = Gate(queue, options=options)
        if parked_run is None:
            return await gate.run('CALL delete_ticket {"id": "t3"}')
        return await gate.resume(parked_run)


async def langgraph(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from crossgate import Approve, Edit
    from crossgate_langgraph import Gate, open_checkpointer, request_approval

    class State(TypedDict, total=False):
        ticket: str
        outcome: str

    def delete_ticket(state: State) -> State:
        decision = request_approval(queue, "delete_ticket", {"id": state["ticket"]})
        if isinstance(decision, Approve | Edit):
            return {"outcome": delete(folder, decision.args["id"] if isinstance(decision, Edit) else state["ticket"])}
        return {"outcome": "not deleted"}

    async with open_checkpointer(str(folder / "checkpoints.db")) as saver:
        builder = StateGraph(State)
        builder.add_node("delete_ticket", delete_ticket)
        builder.add_edge(START, "delete_ticket")
        builder.add_edge("delete_ticket", END)
        graph = builder.compile(checkpointer=saver, name="tickets")
        if parked_run is None:
            return await Gate(queue, graph).run(graph, {"ticket": "t3"}, thread="first-call")
        return await Gate(queue, graph).resume(parked_run)


async def agent_framework(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from agent_framework import Agent, tool

    from crossgate_agent_framework import Gate
    from crossgate_agent_framework.testing import Call, planned_client

    @tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return delete(folder, id)

    client = planned_client([[Call("delete_ticket", {"id": "t3"}, "call_t3")]])
    agent = Agent(client=client, name="Triage", tools=[delete_ticket])
    if parked_run is None:
        return await Gate(queue).run(agent, "Delete the spam ticket t3")
    return await Gate(queue, sdk_agent=agent).resume(parked_run)


async def google_adk(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from google.adk.agents import LlmAgent

    from crossgate_google_adk import Gate
    from crossgate_google_adk.testing import Call, planned_llm

    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return delete(folder, id)

    model = planned_llm([[Call("delete_ticket", {"id": "t3"}, "call_t3")]])
    agent = LlmAgent(name="triage", model=model, tools=[delete_ticket])
    if parked_run is None:
        return await Gate(queue).run(agent, "Delete the spam ticket t3")
    return await Gate(queue, sdk_agent=agent).resume(parked_run)


async def strands(queue: ReviewQueue, folder: Path, parked_run: str | None) -> Finished[Any] | Parked:
    from strands import Agent, tool

    from crossgate_strands import Gate
    from crossgate_strands.testing import Call, planned_model

    @tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return delete(folder, id)

    model = planned_model([[Call("delete_ticket", {"id": "t3"}, "call_t3")]])
    agent = Agent(name="triage", model=model, tools=[delete_ticket], callback_handler=None)
    if parked_run is None:
        return await Gate(queue).run(agent, "Delete the spam ticket t3")
    return await Gate(queue, sdk_agent=agent).resume(parked_run)


async def main(sdk: str, step: str, folder: Path) -> None:
    queue = queue_in(folder)
    runners = {
        "openai": openai,
        "claude": claude,
        "langgraph": langgraph,
        "agent-framework": agent_framework,
        "google-adk": google_adk,
        "strands": strands,
    }
    runner = runners[sdk]
    parked_file = folder / "parked_run"
    parked_run = parked_file.read_text(encoding="utf-8") if step == "resume" else None
    outcome = await runner(queue, folder, parked_run)
    if isinstance(outcome, Parked):
        parked_file.write_text(outcome.parked_run, encoding="utf-8")
        print(json.dumps({"outcome": "parked", "request_ids": list(outcome.request_ids)}))
    else:
        print(json.dumps({"outcome": "finished"}))
    queue.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))

"""The demo's real SDK agents: one ticket agent per adapter, offline, with the demo's ticket table as the tool body.

- OpenAI Agents SDK: ``crossgate_openai.Gate`` around an ``Agent`` driven by the SDK's ``ScriptedModel``.
- Claude Agent SDK: ``crossgate_claude.Gate`` running the real bundled Claude Code CLI against the local
  scripted Messages API of ``crossgate_claude.testing`` (on 127.0.0.1).
- LangGraph: ``crossgate_langgraph.Gate`` around a one-node graph that calls ``request_approval``, with a
  SQLite checkpointer.
- Pydantic AI: ``crossgate_pydantic_ai.Gate`` around an ``Agent`` driven by the SDK's ``FunctionModel``.
- Microsoft Agent Framework: ``crossgate_agent_framework.Gate`` around an ``Agent`` on a scripted chat client
  (``crossgate_agent_framework.testing``, on the SDK's own ``BaseChatClient``).
- Google ADK: ``crossgate_google_adk.Gate`` around an ``LlmAgent`` on a scripted model
  (``crossgate_google_adk.testing``, on ADK's own ``BaseLlm``).

Each factory returns None when its SDK or adapter is not installed; the demo then uses the stand-in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from demo_agents import TICKET_SCHEMA, AgentSpec, DemoTickets

from crossgate import ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate.stores import RequestQuery


def _final(run: str, outcome: Finished[Any] | Parked, text: str) -> Finished[object] | Parked:
    return Finished(run, text) if isinstance(outcome, Finished) else outcome


class GatedDemoAgent:
    """What the demo agents on a ``Gate`` bound to its SDK agent share: start and resume, and the text read back."""

    gate: Any
    agent: Any

    async def start(self, run: str) -> Finished[object] | Parked:
        outcome = await self.gate.run(self.agent, "Delete the duplicate ticket.", run=run)
        return _final(run, outcome, self._text(outcome))

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        outcome = await self.gate.resume(parked_run)
        return _final(outcome.run, outcome, self._text(outcome))

    def _text(self, outcome: Finished[Any] | Parked) -> str:
        """What the ticket tool returned, as the model saw it ('' while parked)."""
        raise NotImplementedError


class OpenAIDemoAgent(GatedDemoAgent):
    """A triage agent on the OpenAI Agents SDK whose ``delete_ticket`` is gated by crossgate."""

    framework = "openai-agents"
    label = "openai-agents via crossgate_openai (ScriptedModel)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, *, resume_only: bool = False) -> None:
        from agents import Agent, function_tool, set_tracing_disabled
        from agents.testing import ScriptedModel
        from agents.testing.model import assistant_message, function_call

        from crossgate_openai import Gate

        set_tracing_disabled(True)

        @function_tool
        def delete_ticket(id: str, reason: str = "") -> str:
            """Delete a ticket by id. This cannot be undone."""
            return tickets.delete(id)

        # The scripted model answers turn by turn; a process that only resumes starts after the tool call.
        call = function_call("delete_ticket", {"id": spec.ticket, "reason": "duplicate"}, call_id=f"call_{spec.key}")
        steps = [[call], [assistant_message(f"Done with ticket {spec.ticket}.")]]
        model = ScriptedModel(steps[1:] if resume_only else steps)
        self.agent = Agent(
            name=spec.agent, instructions="Delete duplicate tickets.", tools=[delete_ticket], model=model
        )
        self.gate = Gate(queue, sdk_agent=self.agent)

    def _text(self, outcome: Finished[Any] | Parked) -> str:
        if not isinstance(outcome, Finished):
            return ""
        for item in reversed(outcome.result.new_items):  # what the tool returned, as the model saw it
            if getattr(item, "type", "") == "tool_call_output_item":
                return str(item.output)
        return str(outcome.result.final_output)


class ClaudeDemoAgent:
    """A support agent on the Claude Agent SDK: the real bundled CLI against a scripted Messages API."""

    framework = "claude-agent-sdk"
    label = "claude-agent-sdk via crossgate_claude (bundled CLI, local scripted Messages API)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> None:
        from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

        from crossgate_claude import Gate
        from crossgate_claude.testing import MessagesAPI, cli_env

        self.results: list[str] = []

        @tool("delete_ticket", "Delete a ticket by id. This cannot be undone.", {"id": str})
        async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
            text = tickets.delete(str(args["id"]))
            self.results.append(text)
            return {"content": [{"type": "text", "text": text}]}

        self.api = MessagesAPI().start()
        work = workdir / "claude-work"
        work.mkdir(parents=True, exist_ok=True)
        options = ClaudeAgentOptions(
            mcp_servers={"tickets": create_sdk_mcp_server("tickets", tools=[delete_ticket])},
            tools=[],
            setting_sources=[],
            cwd=str(work),
            env=cli_env(self.api.base_url, workdir / "claude-cli"),
            system_prompt="You are a support agent. You delete tickets when asked.",
        )
        # The MCP tool's schema says only "id: str"; give reviewers the full one for the edit form.
        schema = {**TICKET_SCHEMA, "properties": {"id": TICKET_SCHEMA["properties"]["id"]}}
        self.gate = Gate(queue, options=options, agent=spec.agent, args_schemas={"delete_ticket": schema})
        self.prompt = f"CALL delete_ticket {json.dumps({'id': spec.ticket})}"

    async def start(self, run: str) -> Finished[object] | Parked:
        outcome = await self.gate.run(self.prompt)
        return _final(outcome.run, outcome, self._text())

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        outcome = await self.gate.resume(parked_run)
        return _final(outcome.run, outcome, self._text())

    def _text(self) -> str:
        if self.results:
            return self.results[-1]
        for body in reversed(self.api.requests):  # what the model was told when the call did not run
            for message in reversed(body.get("messages", [])):
                for block in message.get("content", []) if isinstance(message.get("content"), list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        content = block.get("content")
                        if isinstance(content, list):
                            return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
                        return str(content)
        return "finished"

    def close(self) -> None:
        self.api.stop()


class TicketState(TypedDict, total=False):
    ticket_id: str
    outcome: str


class LangGraphDemoAgent:
    """A one-node LangGraph graph that asks crossgate before deleting, checkpointed in SQLite."""

    framework = "langgraph"
    label = "langgraph via crossgate_langgraph (request_approval, SQLite checkpointer)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> None:
        self.queue = queue
        self.tickets = tickets
        self.spec = spec
        self.checkpoints = str(workdir / "checkpoints.db")

    def _graph(self, saver: Any) -> Any:
        from langchain_core.runnables import RunnableConfig
        from langgraph.graph import END, START, StateGraph

        from crossgate import Edit, Reject, Respond
        from crossgate_langgraph import request_approval

        queue, tickets, spec = self.queue, self.tickets, self.spec

        def delete_ticket(state: TicketState, config: RunnableConfig) -> TicketState:
            # Runs again from the top on resume: nothing before request_approval may have effects.
            args = {"id": state["ticket_id"], "reason": "duplicate"}
            decision = request_approval(queue, "delete_ticket", args, agent=spec.agent, args_schema=TICKET_SCHEMA)
            if isinstance(decision, Reject | Respond):
                outcome = decision.message if isinstance(decision, Reject) else decision.content
                record(config, ran=False, result=outcome)
                return {"outcome": outcome}
            target = decision.args["id"] if isinstance(decision, Edit) else args["id"]
            result = tickets.delete(str(target))
            record(config, ran=True, result=result)
            return {"outcome": result}

        def record(config: RunnableConfig, *, ran: bool, result: str) -> None:
            # request_approval leaves running the tool to the node, so the node logs whether it ran
            thread = str(config.get("configurable", {}).get("thread_id"))
            latest = queue.list_requests(RequestQuery(run=thread, tool="delete_ticket", limit=1)).items
            queue.record_outcome(latest[0].id if latest else None, ran=ran, result=result)

        builder = StateGraph(TicketState)
        builder.add_node("delete_ticket", delete_ticket)
        builder.add_edge(START, "delete_ticket")
        builder.add_edge("delete_ticket", END)
        return builder.compile(checkpointer=saver, name="demo-tickets")

    async def start(self, run: str) -> Finished[object] | Parked:
        from crossgate_langgraph import Gate, open_checkpointer

        async with open_checkpointer(self.checkpoints) as saver:
            graph = self._graph(saver)
            outcome = await Gate(self.queue, graph).run(graph, {"ticket_id": self.spec.ticket}, thread=run)
        return _final(run, outcome, self._text(outcome))

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        from crossgate_langgraph import Gate, open_checkpointer

        async with open_checkpointer(self.checkpoints) as saver:
            graph = self._graph(saver)
            outcome = await Gate(self.queue, graph).resume(parked_run)
        return _final(outcome.run, outcome, self._text(outcome))

    @staticmethod
    def _text(outcome: Finished[Any] | Parked) -> str:
        return str(outcome.result.get("outcome", "")) if isinstance(outcome, Finished) else ""


class PydanticAIDemoAgent(GatedDemoAgent):
    """A triage agent on Pydantic AI whose ``delete_ticket`` goes through crossgate's toolset."""

    framework = "pydantic-ai"
    label = "pydantic-ai via crossgate_pydantic_ai (FunctionModel)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec) -> None:
        from pydantic_ai import Agent

        from crossgate_pydantic_ai import Gate
        from crossgate_pydantic_ai.testing import Call, planned_model

        # The scripted model reads its turn from the history, so a process that only resumes needs nothing else.
        call = Call("delete_ticket", json.dumps({"id": spec.ticket, "reason": "duplicate"}), f"call_{spec.key}")
        self.agent: Any = Agent(planned_model([[call]]), name=spec.agent, instructions="Delete duplicate tickets.")

        @self.agent.tool_plain
        def delete_ticket(id: str, reason: str = "") -> str:
            """Delete a ticket by id. This cannot be undone."""
            return tickets.delete(id)

        self.gate = Gate(queue, sdk_agent=self.agent)

    @staticmethod
    def _text(outcome: Finished[Any] | Parked) -> str:
        if not isinstance(outcome, Finished):
            return ""
        for message in reversed(outcome.result.all_messages()):  # what the tool returned, as the model saw it
            for part in getattr(message, "parts", []):
                if part.part_kind == "tool-return" and part.tool_name == "delete_ticket":
                    return str(part.content)
        return str(outcome.result.output)


class AgentFrameworkDemoAgent(GatedDemoAgent):
    """A triage agent on Microsoft Agent Framework whose ``delete_ticket`` goes through crossgate's middleware."""

    framework = "agent-framework"
    label = "agent-framework via crossgate_agent_framework (scripted chat client)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec) -> None:
        from agent_framework import Agent, tool

        from crossgate_agent_framework import Gate
        from crossgate_agent_framework.testing import Call, planned_client

        @tool
        def delete_ticket(id: str, reason: str = "") -> str:
            """Delete a ticket by id. This cannot be undone."""
            return tickets.delete(id)

        # The scripted client reads its turn from the session, so a process that only resumes needs nothing else.
        call = Call("delete_ticket", {"id": spec.ticket, "reason": "duplicate"}, f"call_{spec.key}")
        self.agent: Any = Agent(client=planned_client([[call]]), name=spec.agent, tools=[delete_ticket])
        self.gate = Gate(queue, sdk_agent=self.agent)

    @staticmethod
    def _text(outcome: Finished[Any] | Parked) -> str:
        if not isinstance(outcome, Finished):
            return ""
        for message in reversed(outcome.result.messages):  # what the tool returned, as the model saw it
            for content in message.contents:
                if content.type == "function_result":
                    if isinstance(content.result, str):  # the SDK keeps a plain string result as it is
                        return content.result
                    return " ".join(str(getattr(c, "text", c)) for c in content.result or [])
        return str(outcome.result.text)


class GoogleADKDemoAgent(GatedDemoAgent):
    """A triage agent on Google ADK whose ``delete_ticket`` goes through crossgate's plugin."""

    framework = "google-adk"
    label = "google-adk via crossgate_google_adk (scripted BaseLlm)"

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec) -> None:
        from google.adk.agents import LlmAgent

        from crossgate_google_adk import Gate
        from crossgate_google_adk.testing import Call, planned_llm

        def delete_ticket(id: str, reason: str = "") -> str:
            """Delete a ticket by id. This cannot be undone."""
            return tickets.delete(id)

        # The scripted model counts its turns in the session, so a process that only resumes needs nothing else.
        call = Call("delete_ticket", {"id": spec.ticket, "reason": "duplicate"}, f"call_{spec.key}")
        self.agent: Any = LlmAgent(name=spec.agent, model=planned_llm([[call]]), tools=[delete_ticket])
        self.gate = Gate(queue, sdk_agent=self.agent)

    @staticmethod
    def _text(outcome: Finished[Any] | Parked) -> str:
        if not isinstance(outcome, Finished):
            return ""
        for event in reversed(outcome.result.events):  # what the tool returned, as the model saw it
            for response in event.get_function_responses():
                if response.name == "delete_ticket":
                    body = response.response or {}
                    # ADK wraps a tool's plain result as {"result": ...}; crossgate answers refusals as {"error": ...}
                    return str(body.get("result", body.get("error", body)))
        return outcome.result.text


def openai_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> OpenAIDemoAgent:
    return OpenAIDemoAgent(queue, tickets, spec)


def claude_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> ClaudeDemoAgent:
    return ClaudeDemoAgent(queue, tickets, spec, workdir)


def langgraph_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> LangGraphDemoAgent:
    return LangGraphDemoAgent(queue, tickets, spec, workdir)


def pydantic_ai_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> PydanticAIDemoAgent:
    return PydanticAIDemoAgent(queue, tickets, spec)


def agent_framework_agent(
    queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path
) -> AgentFrameworkDemoAgent:
    return AgentFrameworkDemoAgent(queue, tickets, spec)


def google_adk_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> GoogleADKDemoAgent:
    return GoogleADKDemoAgent(queue, tickets, spec)

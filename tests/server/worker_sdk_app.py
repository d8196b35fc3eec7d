"""Resumers for ``crossgate worker --app tests.server.worker_sdk_app:resumers``: the demo's six real SDK agents.

They resume runs that another process started, using the files in ``$DEMO_WORKDIR`` (tickets, LangGraph
checkpoints, the Claude CLI's session store).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crossgate import ReviewQueue
from tests.server.demo_loader import load_demo


def resumers(queue: ReviewQueue) -> list[Any]:
    load_demo()
    import demo_agents
    import demo_sdk_agents

    workdir = Path(os.environ["DEMO_WORKDIR"])
    tickets = demo_agents.DemoTickets(workdir / "tickets.db")
    specs = {spec.key: spec for spec in demo_agents.SPECS}
    return [
        demo_sdk_agents.OpenAIDemoAgent(queue, tickets, specs["openai"], resume_only=True),
        demo_sdk_agents.ClaudeDemoAgent(queue, tickets, specs["claude"], workdir),
        demo_sdk_agents.LangGraphDemoAgent(queue, tickets, specs["langgraph"], workdir),
        demo_sdk_agents.PydanticAIDemoAgent(queue, tickets, specs["pydantic-ai"]),
        demo_sdk_agents.AgentFrameworkDemoAgent(queue, tickets, specs["agent-framework"]),
        demo_sdk_agents.GoogleADKDemoAgent(queue, tickets, specs["google-adk"]),
    ]

"""A CrewAI crew whose tool calls wait for a reviewer in crossgate, through AAP's CrewAI hooks.

    crossgate serve --policy examples/policy.yaml          # prints CROSSGATE_SERVER and CROSSGATE_AGENT_TOKEN
    make crewai                                            # .venv-crewai: examples/crewai/requirements.txt
    set -a; . ~/.local/share/crossgate/agent.env; set +a
    OPENAI_API_KEY=... .venv-crewai/bin/python examples/crewai/agent.py

The recipe, and what CrewAI gets compared with a native adapter: docs/crewai.md.

``agentapprovalprotocol.crewai.ApprovalHooks`` registers CrewAI's global tool-call hooks: every tool call
any crew in this process makes is sent to crossgate's AAP provider (``$CROSSGATE_SERVER/aap``) and waits
there, on the reviewer page, for a decision. An approved call runs once; a rejected one does not run and
the model reads the reviewer's message as the tool's result. The tickets live in a JSON file
(``$TICKETS_FILE``, default ``tickets.json``), so what ran is visible after the crew finishes.

``$OPENAI_BASE_URL`` points the model at any OpenAI-compatible chat-completions server; ``$CREWAI_MODEL``
names the model (default ``openai/gpt-4o-mini``). Telemetry and tracing are off unless already set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

for _flag in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_DISABLE_VERSION_CHECK"):
    os.environ.setdefault(_flag, "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from agentapprovalprotocol.crewai import ApprovalHooks  # noqa: E402  (after the telemetry switches)
from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402

TICKETS = Path(os.environ.get("TICKETS_FILE", "tickets.json"))


def load_tickets() -> dict[str, list[str]]:
    """The open tickets and the log of deletes that ran."""
    if not TICKETS.exists():
        return {"open": ["t1", "t2", "t3"], "deleted": []}
    data: dict[str, list[str]] = json.loads(TICKETS.read_text(encoding="utf-8"))
    return data


@tool("delete_ticket")
def delete_ticket(id: str) -> str:
    """Delete one support ticket by its id. This cannot be undone."""
    tickets = load_tickets()
    tickets["deleted"].append(id)
    if id not in tickets["open"]:
        TICKETS.write_text(json.dumps(tickets), encoding="utf-8")
        return f"ticket {id} does not exist"
    tickets["open"].remove(id)
    TICKETS.write_text(json.dumps(tickets), encoding="utf-8")
    return f"deleted ticket {id}"


def crew() -> Crew:
    """One agent, one task, the delete tool; the model is whatever the environment names."""
    llm = LLM(
        model=os.environ.get("CREWAI_MODEL", "openai/gpt-4o-mini"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        temperature=0,
    )
    support = Agent(
        role="Support clean-up",
        goal="Remove spam tickets, and follow any instruction a reviewer gives",
        backstory="You tidy the support queue. Every delete waits for a person.",
        tools=[delete_ticket],
        llm=llm,
        allow_delegation=False,
        max_iter=5,
    )
    task = Task(
        description="Tickets t3 and t1 look like spam. Delete them, one call each.",
        expected_output="What was deleted, and what the reviewer said about the rest.",
        agent=support,
    )
    return Crew(agents=[support], tasks=[task])


def main() -> None:
    url = os.environ["CROSSGATE_SERVER"].rstrip("/") + "/aap"
    # CrewAI cannot park a run, so the crew waits: up to an hour for a reviewer, then the call is refused.
    with ApprovalHooks(url, os.environ["CROSSGATE_AGENT_TOKEN"], timeout="1h", wait_limit=3600):
        result = crew().kickoff()
    print(f"crew: {result}")
    print(f"tickets: {json.dumps(load_tickets(), sort_keys=True)}")


if __name__ == "__main__":
    main()

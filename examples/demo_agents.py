"""Pluggable agents for ``examples/demo.py``: one per SDK, each asking to delete one ticket.

Every agent has the adapters' shape: ``start(run)`` finishes or parks, ``resume(parked_run)`` takes a
parked run forward once. ``SyntheticAgent`` submits through the queue API directly and stands in for
an SDK whose adapter is not installed; ``build_agents`` picks the real adapter piece where one exists.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from crossgate import ReviewQueue, ToolCall, VerdictKind
from crossgate.clock import new_id
from crossgate.runs import Finished, Parked

TICKET_TOOL = "delete_ticket"
TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^T-[0-9]+$", "description": "ticket id, e.g. T-101"},
        "reason": {"type": "string", "maxLength": 200, "description": "why it goes"},
    },
    "required": ["id"],
    "additionalProperties": False,
}


class DemoTickets:
    """The demo's ticket table in a SQLite file, with a log of every delete that ran."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, title TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS deletes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def seed(self, tickets: Iterable[tuple[str, str]]) -> None:
        with self._connect() as db:
            db.executemany("INSERT OR IGNORE INTO tickets (id, title) VALUES (?, ?)", list(tickets))

    def ids(self) -> list[str]:
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT id FROM tickets ORDER BY id")]

    def delete(self, ticket_id: str) -> str:
        """The tool body."""
        with self._connect() as db:
            db.execute("INSERT INTO deletes (id) VALUES (?)", (ticket_id,))
            gone = db.execute("DELETE FROM tickets WHERE id = ?", (ticket_id,)).rowcount
        return f"deleted ticket {ticket_id}" if gone else f"ticket {ticket_id} does not exist"

    def delete_runs(self) -> list[str]:
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT id FROM deletes ORDER BY seq")]


class DemoAgent(Protocol):
    """One SDK's ticket agent behind crossgate, as the demo drives it."""

    framework: str
    label: str
    """How the demo names it: the SDK, and whether it is the real adapter or the stand-in."""

    async def start(self, run: str) -> Finished[object] | Parked: ...

    async def resume(self, parked_run: str) -> Finished[object] | Parked: ...


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """Which SDK, which ticket the agent asks to delete, and what the scripted reviewer decides."""

    key: str
    framework: str
    agent: str
    ticket: str
    decision: str
    """approve, edit or reject: what ``--auto`` answers."""
    edit_to: str | None = None
    reject_message: str = "Do not delete this ticket: the customer still needs it. Close it instead."


SPECS = (
    AgentSpec("openai", "openai-agents", "support-openai", "T-101", "approve"),
    AgentSpec("claude", "claude-agent-sdk", "support-claude", "T-202", "edit", edit_to="T-204"),
    AgentSpec("langgraph", "langgraph", "support-langgraph", "T-303", "reject"),
    AgentSpec("pydantic-ai", "pydantic-ai", "support-pydantic-ai", "T-404", "approve"),
    AgentSpec("agent-framework", "agent-framework", "support-agent-framework", "T-606", "approve"),
    AgentSpec("google-adk", "google-adk", "support_google_adk", "T-707", "approve"),  # ADK names are identifiers
)
TICKETS = (
    ("T-101", "Duplicate of T-100"),
    ("T-202", "Printer on floor 2 (still open)"),
    ("T-204", "Printer on floor 2 (duplicate)"),
    ("T-303", "VPN drops every hour"),
    ("T-404", "Newsletter bounce, duplicate of T-400"),
    ("T-606", "Password reset mail, duplicate of T-600"),
    ("T-707", "Login page typo, duplicate of T-700"),
)


class SyntheticAgent:
    """Stands in for an SDK: proposes one delete through ``ReviewQueue.submit``, parks, and applies the answer."""

    def __init__(self, queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec) -> None:
        self.queue = queue
        self.tickets = tickets
        self.spec = spec
        self.framework = spec.framework
        self.label = f"{spec.framework} (synthetic stand-in)"
        self.owner = f"demo-{spec.key}"

    async def start(self, run: str) -> Finished[object] | Parked:
        call = ToolCall(
            framework=self.framework,
            tool=TICKET_TOOL,
            args={"id": self.spec.ticket, "reason": "duplicate"},
            call_id=new_id("call"),
            run=run,
            agent=self.spec.agent,
        )
        submission = self.queue.submit(call, args_schema=TICKET_SCHEMA)
        if submission.request is None:
            ran = submission.verdict.kind is VerdictKind.ALLOW
            result = self.tickets.delete(self.spec.ticket) if ran else submission.verdict.reason
            self.queue.record_outcome(None, ran=ran, result=result, call=call)
            return Finished(run, result)
        request = submission.request
        state = json.dumps({"request": request.id})
        parked = self.queue.park(framework=self.framework, run=run, request_ids=[request.id], state=state)
        return Parked(run, parked.id, (request.id,))

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        parked = self.queue.claim_parked(parked_run, owner=self.owner)
        request_id = json.loads(parked.state)["request"]
        request = self.queue.get(request_id)
        args = request.approved_args()
        self.queue.mark_applied(request_id, args=args, actor=self.owner)
        if args is not None:
            result = self.tickets.delete(str(args["id"]))
            self.queue.record_outcome(request_id, ran=True, result=result)
        else:
            resolution = request.resolution()
            result = getattr(resolution, "message", None) or getattr(resolution, "content", "")
            self.queue.record_outcome(request_id, ran=False, result=result)
        self.queue.finish_parked(parked_run, owner=self.owner, outcome=result)
        return Finished(parked.run, result)


REAL_AGENTS: dict[str, str] = {
    "openai": "demo_sdk_agents:openai_agent",
    "claude": "demo_sdk_agents:claude_agent",
    "langgraph": "demo_sdk_agents:langgraph_agent",
    "pydantic-ai": "demo_sdk_agents:pydantic_ai_agent",
    "agent-framework": "demo_sdk_agents:agent_framework_agent",
    "google-adk": "demo_sdk_agents:google_adk_agent",
}
"""Spec key -> factory ``module:function`` (in examples/) taking (queue, tickets, spec, workdir).

A factory whose SDK or adapter is not installed falls back to ``SyntheticAgent``."""


def build_agents(
    queue: ReviewQueue,
    tickets: DemoTickets,
    workdir: Path,
    *,
    specs: Sequence[AgentSpec] = SPECS,
    synthetic: bool = False,
) -> list[DemoAgent]:
    """One agent per spec: the real adapter piece when installed (unless ``synthetic``), else the stand-in."""
    agents: list[DemoAgent] = []
    for spec in specs:
        agent = None if synthetic else _real_agent(queue, tickets, spec, workdir)
        agents.append(agent if agent is not None else SyntheticAgent(queue, tickets, spec))
    return agents


def _real_agent(queue: ReviewQueue, tickets: DemoTickets, spec: AgentSpec, workdir: Path) -> DemoAgent | None:
    target = REAL_AGENTS.get(spec.key)
    if target is None:
        return None
    module_name, _, attr = target.partition(":")
    here = str(Path(__file__).parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
        agent: DemoAgent | None = getattr(module, attr)(queue, tickets, spec, workdir)
    except ImportError as exc:
        print(f"demo: {spec.framework}: {exc}; using the synthetic stand-in", file=sys.stderr)
        return None
    return agent

"""The Strands ticket driver for the shared conformance scenarios (``crossgate.testing``).

The agent is the seed's delete-ticket agent on ``crossgate_strands.testing.planned_model``, which asks for one
delete per turn. Everything a fresh process needs to resume is on files under ``workdir``: the plan, the
policy, and the model's recorded inputs, which ``tool_results`` reads.

``python -c '...main()' resume --db URL --tickets PATH --workdir DIR PARKED_RUN`` resumes a parked run in
another process (see ``resume_command``); ``... start ... --run RUN t3 t1`` starts one there. With
``$CG_TEST_KILL_IN_TOOL`` set to ``before`` or ``after``, the delete tool SIGKILLs its own process before or
after it deletes (a resumer dying inside the tool).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from strands import Agent, tool
from strands.types.tools import AgentTool

from crossgate import DecisionKind, Policy, ReviewQueue, open_queue
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketAgentDriver, TicketStore
from crossgate.testing.driver import TOOL
from crossgate_strands import CAPABILITIES, FRAMEWORK, Gate
from crossgate_strands.testing import Call, PlannedModel, planned_model, tool_results

ROOT = Path(__file__).resolve().parents[3]
TASK = "Delete the spam tickets."
AGENT = "triage_agent"


def delete_call(ticket: Any) -> Call:
    """The seed's call: ``delete_ticket {"id": <ticket>}`` with call id ``call_<ticket>``."""
    return Call(TOOL, {"id": ticket}, f"call_{ticket}")


def delete_tool(tickets: TicketStore) -> AgentTool:
    """The seed's tool, ``delete_ticket(id)``, whose body is ``tickets.delete``."""

    @tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        kill = os.environ.get("CG_TEST_KILL_IN_TOOL")
        if kill == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = tickets.delete(id)
        if kill == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    return delete_ticket  # type: ignore[no-any-return]


def ticket_agent(tickets: TicketStore, model: PlannedModel, *, name: str = AGENT, tools: Sequence[Any] = ()) -> Agent:
    """The seed's agent: ``delete_ticket`` (and ``tools``), on the scripted model."""
    return Agent(
        name=name,
        model=model,
        system_prompt="Delete spam tickets.",
        tools=[*tools, delete_tool(tickets)],
        callback_handler=None,
    )


class StrandsTicketDriver(TicketAgentDriver):
    """The delete-ticket agent on Strands Agents, behind ``crossgate_strands.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)

    def __init__(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> None:
        super().__init__(queue, tickets, workdir, db_url)
        self.gate = Gate(queue)

    def _file(self, kind: str, run: str) -> Path:
        return self.workdir / f"strands-{kind}-{run}.json"

    def agent(self, run: str) -> Agent:
        """The agent of ``run``, rebuilt from its saved plan (the same name and tools in every process)."""
        plan = json.loads(self._file("plan", run).read_text(encoding="utf-8"))
        return ticket_agent(
            self.tickets, planned_model([[delete_call(t)] for t in plan], record=self._file("inputs", run))
        )

    async def start(
        self,
        ticket_ids: Sequence[str],
        *,
        run: str,
        requested_by: str | None = None,
        call_context: dict[str, Any] | None = None,
    ) -> Finished[object] | Parked:
        self._file("plan", run).write_text(json.dumps(list(ticket_ids)), encoding="utf-8")
        self.workdir.joinpath("strands-policy.json").write_text(self.queue.policy.model_dump_json(), encoding="utf-8")
        return await self.gate.run(self.agent(run), TASK, run=run, requested_by=requested_by, call_context=call_context)

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        run = self.queue.get_parked(parked_run).run
        return await self.gate.resume(parked_run, sdk_agent=self.agent(run))

    def resume_command(self, parked_run: str) -> list[str]:
        return [*self.command("resume"), parked_run]

    def command(self, kind: str) -> list[str]:
        """argv of ``main`` in a fresh process, up to the targets."""
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from {__name__} import main; main()"
        return [
            sys.executable,
            "-c",
            code,
            kind,
            "--db",
            self.db_url,
            "--tickets",
            str(self.tickets.path),
            "--workdir",
            str(self.workdir),
        ]

    def tool_results(self, run: str) -> list[str]:
        return tool_results(self._file("inputs", run), TOOL)


def main(argv: Sequence[str] | None = None) -> None:
    """Start or resume a run in this process; print the outcome as JSON; exit 0 when it finished or parked."""
    parser = argparse.ArgumentParser(prog="strands-ticket-driver")
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tickets", required=True, type=Path)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--run", help="the run to start (start only)")
    parser.add_argument("--lease", type=float, default=300.0, help="the resumer's lease, seconds")
    parser.add_argument("target", nargs="+", help="ticket ids to ask for (start), or the parked run (resume)")
    args = parser.parse_args(argv)
    policy_file = args.workdir / "strands-policy.json"
    policy = Policy.model_validate_json(policy_file.read_text(encoding="utf-8")) if policy_file.exists() else None
    queue = open_queue(args.db, policy=policy)  # a store's URL, or a review server's (RemoteQueue)
    try:
        driver = StrandsTicketDriver(queue, TicketStore(args.tickets), args.workdir, args.db)
        driver.gate.lease_seconds = args.lease
        if args.command == "start":
            outcome = asyncio.run(driver.start(args.target, run=args.run or "run"))
        else:
            outcome = asyncio.run(driver.resume(args.target[0]))
    finally:
        queue.close()
    if isinstance(outcome, Finished):
        print(json.dumps({"finished": outcome.run}))
    else:
        print(json.dumps({"parked_run": outcome.parked_run, "request_ids": list(outcome.request_ids)}))

"""The OpenAI Agents SDK ticket driver for ``AdapterContract`` (``crossgate.testing.TicketAgentDriver``).

The agent is the seed's delete-ticket agent on a ``PlannedModel`` that asks for one delete per turn.
Everything a fresh process needs to resume is on files under ``workdir``: the plan (which tickets the
model asks for), the policy, and the model's recorded inputs, which ``tool_results`` reads.

Run ``python -c '...main()' resume --db URL --tickets PATH --workdir DIR PARKED_RUN`` (see
``resume_command``) to resume a parked run in another process, and ``... start ... --run RUN t3 t1`` to
start one there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from agents import Agent, set_tracing_disabled

from crossgate import DecisionKind, Policy, ReviewQueue, open_queue
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketAgentDriver, TicketStore
from crossgate_openai import CAPABILITIES, FRAMEWORK, Gate
from tests.adapters.openai.scripted import PlannedModel, delete_call, read_record, ticket_agent, tool_results

ROOT = Path(__file__).resolve().parents[3]
TASK = "Delete the spam tickets."

set_tracing_disabled(True)


class OpenAITicketDriver(TicketAgentDriver):
    """The delete-ticket agent on the OpenAI Agents SDK, behind ``crossgate_openai.Gate``."""

    framework: ClassVar[str] = FRAMEWORK
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(CAPABILITIES)

    def __init__(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> None:
        super().__init__(queue, tickets, workdir, db_url)
        self.gate = Gate(queue)

    def _file(self, kind: str, run: str) -> Path:
        return self.workdir / f"openai-{kind}-{run}.json"

    def agent(self, run: str) -> Agent[Any]:
        """The agent of ``run``, rebuilt from its saved plan (the same names and tools in every process)."""
        plan = json.loads(self._file("plan", run).read_text(encoding="utf-8"))
        model = PlannedModel([[delete_call(t)] for t in plan], record=self._file("inputs", run))
        return ticket_agent(self.tickets, model)

    async def start(
        self,
        ticket_ids: Sequence[str],
        *,
        run: str,
        requested_by: str | None = None,
        call_context: dict[str, Any] | None = None,
    ) -> Finished[object] | Parked:
        self._file("plan", run).write_text(json.dumps(list(ticket_ids)), encoding="utf-8")
        self.workdir.joinpath("openai-policy.json").write_text(self.queue.policy.model_dump_json(), encoding="utf-8")
        return await self.gate.run(self.agent(run), TASK, run=run, requested_by=requested_by, call_context=call_context)

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        run = self.queue.get_parked(parked_run).run
        return await self.gate.resume(parked_run, sdk_agent=self.agent(run))

    def resume_command(self, parked_run: str) -> list[str]:
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.openai.driver import main; main()"
        return [
            sys.executable,
            "-c",
            code,
            "resume",
            "--db",
            self.db_url,
            "--tickets",
            str(self.tickets.path),
            "--workdir",
            str(self.workdir),
            parked_run,
        ]

    def tool_results(self, run: str) -> list[str]:
        return tool_results(read_record(self._file("inputs", run)))


def main(argv: Sequence[str] | None = None) -> None:
    """Start or resume a run in this process; print the outcome as JSON; exit 0 when it finished or parked."""
    parser = argparse.ArgumentParser(prog="openai-ticket-driver")
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tickets", required=True, type=Path)
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--run", help="the run to start (start only)")
    parser.add_argument("--call-context", type=json.loads, help="the app's call context, JSON (start only)")
    parser.add_argument("target", nargs="+", help="ticket ids to ask for (start), or the parked run (resume)")
    args = parser.parse_args(argv)
    policy_file = args.workdir / "openai-policy.json"
    policy = Policy.model_validate_json(policy_file.read_text(encoding="utf-8")) if policy_file.exists() else None
    queue = open_queue(args.db, policy=policy)  # a store's URL, or a review server's (RemoteQueue)
    try:
        driver = OpenAITicketDriver(queue, TicketStore(args.tickets), args.workdir, args.db)
        if args.command == "start":
            outcome = asyncio.run(driver.start(args.target, run=args.run or "run", call_context=args.call_context))
        else:
            outcome = asyncio.run(driver.resume(args.target[0]))
    finally:
        queue.close()
    if isinstance(outcome, Finished):
        print(json.dumps({"finished": outcome.run}))
    else:
        print(json.dumps({"parked_run": outcome.parked_run, "request_ids": list(outcome.request_ids)}))

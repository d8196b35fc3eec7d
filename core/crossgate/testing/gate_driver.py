"""``GateTicketDriver``: the scenario driver of an adapter whose ``Gate`` runs an SDK agent object.

Most adapters share one gate shape: ``Gate(queue)``, ``run(sdk_agent, prompt, *, run=..., requested_by=...,
call_context=...)`` and ``resume(parked_run, *, sdk_agent=...)``, with a scripted model that records what it
was told to a file. For those, a driver says only what differs: its gate, its SDK's delete-ticket agent on
that model, and how to read the model's record. The rest is here, once: the plan and policy files a fresh
process reads, the command lines that start or resume a run in one (``ProcessContract``), and the kill
switch inside the tool::

    class MyTicketDriver(GateTicketDriver[MyAgent]):
        framework = FRAMEWORK
        capabilities = frozenset(CAPABILITIES)

        def make_gate(self, queue, *, authority=None, context=None):
            return Gate(queue, authority=authority, context=context)

        def build_turns(self, turns, record):
            plan = [[delete_call(t) for t in turn] for turn in turns]
            return ticket_agent(self.tickets, planned_model(plan, record=record))

        def read_tool_results(self, record):
            return tool_results(record, TOOL)

The tool body of the agent should be :func:`delete_or_die`, so that ``ProcessContract`` can kill a resumer
inside the tool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Generic, Protocol, TypeVar

from crossgate import Policy, ReviewQueue, open_queue
from crossgate.adapter import AuthorityPin
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate.testing.driver import TOOL, TicketAgentDriver
from crossgate.testing.tickets import TicketStore

KILL_ENV = "CG_TEST_KILL_IN_TOOL"
"""Set to ``before`` or ``after`` in a driver's process: :func:`delete_or_die` SIGKILLs it around the delete."""
TASK = "Delete the spam tickets."
"""The prompt every driver run starts with."""

AgentT = TypeVar("AgentT")
AgentT_contra = TypeVar("AgentT_contra", contravariant=True)


def delete_or_die(tickets: TicketStore, ticket_id: str) -> str:
    """The delete tool's body: ``tickets.delete``, killing its own process before or after as ``$KILL_ENV`` says.

    A resumer that dies inside the tool, before the delete or after it (with no outcome recorded yet).
    """
    kill = os.environ.get(KILL_ENV)
    if kill == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = tickets.delete(ticket_id)
    if kill == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return result


class SdkGate(Protocol[AgentT_contra]):
    """The gate shape ``GateTicketDriver`` drives (the adapters' ``Gate`` classes have it)."""

    lease_seconds: float

    async def run(
        self,
        sdk_agent: AgentT_contra,
        prompt: str,
        *,
        run: str | None = None,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Finished[object] | Parked:
        """Run ``sdk_agent`` until it finishes or parks."""

    async def resume(self, parked_run: str, *, sdk_agent: AgentT_contra | None = None) -> Finished[object] | Parked:
        """Take a parked run forward once."""


class ProcessTicketDriver(TicketAgentDriver):
    """A driver that also starts and resumes runs in fresh processes, by command line (``ProcessContract``)."""

    @abstractmethod
    def start_command(self, ticket_ids: Sequence[str], *, run: str) -> list[str]:
        """argv that starts ``run`` in a fresh process; it prints the outcome as JSON on its last line.

        The line is ``{"finished": run}`` or ``{"parked_run": ..., "request_ids": [...]}``; exit 0 for both.
        """

    @abstractmethod
    def resume_command(self, parked_run: str, *, lease: float | None = None) -> list[str]:
        """argv that resumes ``parked_run`` in a fresh process (its lease ``lease`` seconds), printing as above."""


class GateTicketDriver(ProcessTicketDriver, Generic[AgentT]):
    """The delete-ticket agent behind a gate of the :class:`SdkGate` shape, rebuilt from files in any process.

    ``start`` saves the run's plan (the ticket ids) and the queue's policy under ``workdir``; every process
    rebuilds the same agent from the plan (same name, same tools), and the scripted model appends what it
    is told to the run's record file, which ``tool_results`` reads.
    """

    schema_refusal: ClassVar[str] = f"crossgate did not run {TOOL}: "
    """What the model reads, in part, for arguments the tool's schema refuses (an SDK that validates them
    itself, before any gate sees the call, says its own words)."""

    def __init__(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> None:
        super().__init__(queue, tickets, workdir, db_url)
        self.gate: SdkGate[AgentT] = self.make_gate(queue)

    @abstractmethod
    def make_gate(
        self, queue: ReviewQueue, *, authority: AuthorityPin = None, context: JsonObject | None = None
    ) -> SdkGate[AgentT]:
        """The adapter's gate on ``queue``: ``Gate(queue, authority=authority, context=context)``.

        ``GateContract`` makes gates pinned to an authority key, or with an app context, through it.
        """

    @abstractmethod
    def build_turns(self, turns: Sequence[Sequence[object]], record: Path) -> AgentT:
        """The SDK agent whose scripted model asks, on turn i, to delete every ticket of ``turns[i]`` at once.

        Each call is ``delete_ticket {"id": <ticket>}`` (an id may be a non-string, which the tool's schema
        refuses), and the model records what it is told to ``record``.
        """

    def build_agent(self, ticket_ids: Sequence[str], record: Path) -> AgentT:
        """The SDK agent whose scripted model asks to delete ``ticket_ids[i]`` on turn i, recording to ``record``."""
        return self.build_turns([[ticket] for ticket in ticket_ids], record)

    @abstractmethod
    def read_tool_results(self, record: Path) -> list[str]:
        """What the model recorded in ``record`` it was told for each ``delete_ticket`` call, in order."""

    def file(self, kind: str, run: str) -> Path:
        """The run's ``plan`` or ``inputs`` file under ``workdir``."""
        return self.workdir / f"{self.framework}-{kind}-{run}.json"

    @property
    def policy_file(self) -> Path:
        """Where the queue's policy is saved for the driver's other processes."""
        return self.workdir / f"{self.framework}-policy.json"

    def share_policy(self) -> None:
        """Save the queue's policy where a fresh process of this driver reads it."""
        self.policy_file.write_text(self.queue.policy.model_dump_json(), encoding="utf-8")

    def agent(self, run: str) -> AgentT:
        """The agent of ``run``, rebuilt from its saved plan."""
        turns = json.loads(self.file("plan", run).read_text(encoding="utf-8"))
        return self.build_turns(turns, self.file("inputs", run))

    async def start(
        self,
        ticket_ids: Sequence[str],
        *,
        run: str,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Finished[object] | Parked:
        turns = [[ticket] for ticket in ticket_ids]
        return await self.start_turns(turns, run=run, requested_by=requested_by, call_context=call_context)

    async def start_turns(
        self,
        turns: Sequence[Sequence[object]],
        *,
        run: str,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Finished[object] | Parked:
        """Start ``run`` on the agent of :meth:`build_turns`: turn i asks to delete every ticket of ``turns[i]``."""
        self.file("plan", run).write_text(json.dumps([list(turn) for turn in turns]), encoding="utf-8")
        self.share_policy()
        return await self.gate.run(self.agent(run), TASK, run=run, requested_by=requested_by, call_context=call_context)

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        run = self.queue.get_parked(parked_run).run
        return await self.gate.resume(parked_run, sdk_agent=self.agent(run))

    def tool_results(self, run: str) -> list[str]:
        return self.read_tool_results(self.file("inputs", run))

    def start_command(self, ticket_ids: Sequence[str], *, run: str) -> list[str]:
        self.share_policy()
        return [*self._command("start"), "--run", run, *ticket_ids]

    def resume_command(self, parked_run: str, *, lease: float | None = None) -> list[str]:
        return [*self._command("resume"), *(["--lease", str(lease)] if lease is not None else []), parked_run]

    def _command(self, kind: str) -> list[str]:
        cls = type(self)
        module = sys.modules[cls.__module__]
        # The driver's module must import in the fresh process: put the folder its dotted name starts in first.
        root = Path(module.__file__ or ".").resolve().parents[cls.__module__.count(".")]
        code = (
            f"import sys; sys.path.insert(0, {str(root)!r}); "
            f"from {cls.__module__} import {cls.__qualname__} as D; D.main()"
        )
        where = ["--db", self.db_url, "--tickets", str(self.tickets.path), "--workdir", str(self.workdir)]
        return [sys.executable, "-c", code, kind, *where]

    @classmethod
    def main(cls, argv: Sequence[str] | None = None) -> None:
        """Start or resume a run in this process; print the outcome as JSON; exit 0 when it finished or parked."""
        parser = argparse.ArgumentParser(prog=f"{cls.framework}-ticket-driver")
        parser.add_argument("command", choices=["start", "resume"])
        parser.add_argument("--db", required=True)
        parser.add_argument("--tickets", required=True, type=Path)
        parser.add_argument("--workdir", required=True, type=Path)
        parser.add_argument("--run", help="the run to start (start only)")
        parser.add_argument("--lease", type=float, default=300.0, help="the resumer's lease, seconds")
        parser.add_argument("target", nargs="+", help="ticket ids to ask for (start), or the parked run (resume)")
        args = parser.parse_args(argv)
        policy_file = args.workdir / f"{cls.framework}-policy.json"
        policy = Policy.model_validate_json(policy_file.read_text(encoding="utf-8")) if policy_file.exists() else None
        queue = open_queue(args.db, policy=policy)  # a store's URL, or a review server's (RemoteQueue)
        try:
            driver = cls(queue, TicketStore(args.tickets), args.workdir, args.db)  # type: ignore[arg-type]
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

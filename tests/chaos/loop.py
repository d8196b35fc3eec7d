"""The chaos loop: kill one phase of each run by SIGKILL, recover as an operator would, count what broke.

Each iteration is one run whose model asks to delete one fresh ticket. One of its phases runs in a child
process that dies by SIGKILL: the **submit** (the agent's first run, which parks), the **decide** (a
reviewer), the **resume**, or **inside the tool**. The kill lands right before or after a random one
of the phase's store writes, before or after the tool's side effect, or at a random moment from
outside. The other phases, and the recovery, run in this process through the same adapter code:

- a killed submit: the operator starts the run again, or parks a LangGraph thread that paused but was
  never parked (``Gate.park``);
- a killed decide: the reviewer decides again if the request is still pending;
- a killed resume: the resumer runs again (after the dead one's lease ran out); a run marked failed is
  retried first (``crossgate runs retry``).

What is counted, per iteration:

- **lost**: the run's call has no request after recovery, a decision the reviewer made is not the one
  stored, a request is left pending or decided (never applied or closed), or an approved call did not
  run and is not listed as "applied, no outcome recorded" either (what ``crossgate runs show`` lists);
- **twice**: the tool ran more than once for the call;
- **unapproved**: the tool ran before the decision, or after a rejection;
- **stuck**: the run did not finish within the recovery attempts;
- **unrecorded** (not a failure): the kill landed between the applied mark and the tool's outcome, so
  the call ran at most once and ``runs show`` lists it. Approved calls that did not run are these;
- **orphaned** (not a failure, but reported): a request no parked run holds, left pending after its run
  was started again (a reviewer sees it; nothing waits for it). The run itself parked with a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from crossgate import (
    AlreadyDecidedError,
    Approve,
    CrossgateError,
    ParkedRun,
    ParkedRunStatus,
    Reject,
    RequestStatus,
)
from crossgate.runs import Finished
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery
from tests.chaos.agents import NEVER, Agents, ChaosTickets, Kill, World, child, open_queue

PHASES = ("submit", "decide", "resume", "tool")
RECOVERY_ATTEMPTS = 6
CHILD_TIMEOUT = 60.0
STEP_TIMEOUT = 60.0
EXPECTED_WRITES = {"submit": 2, "decide": 1, "resume": 4}
"""A first guess of each phase's store writes; the loop learns the real counts from the phases it does not kill."""


@dataclass
class Counts:
    """What the loop saw."""

    iterations: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    """Kills that landed (the child died by SIGKILL), by phase."""
    lost: int = 0
    twice: int = 0
    unapproved: int = 0
    stuck: int = 0
    unrecorded: int = 0
    orphaned: int = 0
    recovered: int = 0
    """Iterations whose kill landed and whose run then finished with nothing lost, doubled or unapproved."""
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return self.lost + self.twice + self.unapproved + self.stuck

    def summary(self) -> str:
        killed = sum(self.kills.values())
        ratio = self.recovered / killed if killed else 1.0
        phases = ", ".join(f"{p} {self.kills[p]}" for p in PHASES)
        return (
            f"{self.iterations} iterations, {killed} kills ({phases}); lost {self.lost}, twice {self.twice}, "
            f"unapproved {self.unapproved}, stuck {self.stuck}; "
            f"unrecorded {self.unrecorded}, orphaned {self.orphaned}; "
            f"recovered {self.recovered}/{killed} ({ratio:.0%})"
        )


class ChaosLoop:
    """Runs iterations against one adapter and one database; see the module docstring."""

    def __init__(self, world: World, *, seed: int = 0) -> None:
        self.world = world
        self.rng = random.Random(seed)
        self.queue, self.store = open_queue(world)
        self.tickets = ChaosTickets(world.tickets_path)
        self.agents = Agents(world, self.queue, self.tickets)
        self.counts = Counts()
        self.writes = dict(EXPECTED_WRITES)
        self.durations: dict[str, float] = {"submit": 0.5, "decide": 0.05, "resume": 0.5}
        self.ctx = multiprocessing.get_context("forkserver")

    def close(self) -> None:
        self.queue.close()

    async def run(self, iterations: int, *, deadline: float) -> Counts:
        """Run up to ``iterations`` iterations, starting none after ``deadline`` (``time.monotonic()``)."""
        for i in range(iterations):
            if time.monotonic() >= deadline:
                self.counts.notes.append(f"stopped at the time cap after {i} iterations")
                break
            await self.iteration(i)
        return self.counts

    # one iteration ------------------------------------------------------------------------------
    async def iteration(self, i: int) -> None:
        run, ticket = f"chaos-{self.world.adapter}-{i}", f"c{i}"
        phase = self.rng.choice(PHASES)
        verdict = "approve" if phase == "tool" or self.rng.random() < 0.7 else "reject"
        self.tickets.seed([ticket])
        self.counts.iterations += 1
        killed = False
        problems: list[str] = []

        if phase == "submit":
            killed = self.in_child("submit", (run, ticket))
            await self.step(self.agents.restart(run, ticket))
        else:
            await self.timed("submit", self.agents.start(run, ticket))
        parked = self.parked(run)
        if not parked or len(parked[0].request_ids) != 1:
            self.counts.lost += 1
            self.note(i, phase, f"no request after the submit: {parked}")
            return
        request_id = parked[0].request_ids[0]
        if self.tickets.delete_runs(ticket):
            problems.append("unapproved: the tool ran before any decision")
            self.counts.unapproved += 1

        if phase == "decide":
            killed = self.in_child("decide", (request_id, verdict))
        if self.queue.get(request_id).status is RequestStatus.PENDING:
            await self.timed("decide", self.decide(request_id, verdict))
        decided = self.queue.get(request_id)
        wanted = Approve if verdict == "approve" else Reject
        if not isinstance(decided.resolution(), wanted):
            problems.append(f"lost: the reviewer's {verdict} is stored as {decided.resolution()!r}")
            self.counts.lost += 1

        if phase in ("resume", "tool"):
            killed = self.in_child("resume", (parked[0].id, ticket), tool=phase == "tool")
        finished = await self.recover(run, ticket)
        problems += self.verdict(run, ticket, request_id, verdict, finished)
        if problems:
            self.note(i, phase, "; ".join(problems))
        elif killed:
            self.counts.recovered += 1

    def verdict(self, run: str, ticket: str, request_id: str, verdict: str, finished: bool) -> list[str]:
        problems: list[str] = []
        ran = self.tickets.delete_runs(ticket)
        request = self.queue.get(request_id)
        if ran > 1:
            self.counts.twice += 1
            problems.append(f"twice: the tool ran {ran} times")
        if verdict == "reject" and ran:
            self.counts.unapproved += 1
            problems.append("unapproved: the tool ran after a rejection")
        if request.status in (RequestStatus.PENDING, RequestStatus.DECIDED):
            self.counts.lost += 1
            problems.append(f"lost: the request is still {request.status.value}")
        unrecorded = {r.id for p in self.parked(run) for r in self.queue.applied_without_outcome(p)}
        if request_id in unrecorded:
            self.counts.unrecorded += 1
        elif verdict == "approve" and not ran:
            self.counts.lost += 1
            problems.append("lost: approved, did not run, and is not listed as applied with no outcome")
        stored = self.queue.list_requests(RequestQuery(run=run, limit=MAX_PAGE_SIZE)).items
        orphans = [r for r in stored if r.id not in self.all_request_ids(run)]
        if orphans:
            self.counts.orphaned += 1
            self.counts.notes.append(f"{run}: requests of no parked run, left pending: {[r.id for r in orphans]}")
        if not finished:
            self.counts.stuck += 1
            problems.append(f"stuck: {[(p.id, p.status.value, p.outcome) for p in self.parked(run)]}")
        return problems

    # recovery -----------------------------------------------------------------------------------
    async def recover(self, run: str, ticket: str) -> bool:
        """Resume the run until it finishes, as an operator would; True if it did."""
        for _ in range(RECOVERY_ATTEMPTS):
            latest = self.parked(run)[-1]
            if latest.status is ParkedRunStatus.RESUMED:
                return latest.outcome == "finished"
            if latest.status is ParkedRunStatus.FAILED:
                try:
                    self.queue.retry_parked(latest.id, actor="operator")  # crossgate runs retry
                except CrossgateError:
                    return False
            elif latest.status is ParkedRunStatus.RESUMING:
                await asyncio.sleep(self.lease_left(latest))
            try:
                outcome = await self.timed("resume", self.agents.resume(latest.id, ticket))
            except Exception:  # a refusal, or an SDK error that failed the run: the next attempt sees which
                continue
            if isinstance(outcome, Finished):
                return True
        return False

    def lease_left(self, parked: ParkedRun) -> float:
        if parked.lease_until is None:
            return 0.0
        return max(0.0, (parked.lease_until - datetime.now(UTC)).total_seconds()) + 0.05

    async def decide(self, request_id: str, verdict: str) -> None:
        decision = Approve() if verdict == "approve" else Reject(message="Keep this ticket.")
        with contextlib.suppress(AlreadyDecidedError):  # the killed reviewer's decision got through
            self.queue.decide(request_id, decision, reviewer="ann")

    # processes ----------------------------------------------------------------------------------
    def in_child(self, phase: str, args: tuple[str, ...], *, tool: bool = False) -> bool:
        """Run ``phase`` in a child process that dies by SIGKILL somewhere in it; True if the kill landed."""
        kill, timer = self.draw_kill(phase, tool=tool)
        started = self.ctx.Event()
        process = self.ctx.Process(target=child, args=(self.world, phase, kill, args, started), daemon=True)
        process.start()
        if timer is not None and started.wait(CHILD_TIMEOUT):
            process.join(timer)
            if process.is_alive():
                process.kill()
        process.join(CHILD_TIMEOUT)
        if process.is_alive():
            process.kill()
            process.join()
            self.counts.notes.append(f"a {phase} child hung and was killed")
        landed = process.exitcode == -9
        if landed:
            self.counts.kills["tool" if tool else phase] += 1
        return landed

    def draw_kill(self, phase: str, *, tool: bool) -> tuple[Kill, float | None]:
        """A kill point in ``phase``: in the tool, at a random write, or (one time in four) a random moment."""
        when: Literal["before", "after"] = self.rng.choice(("before", "after"))
        if tool:
            return Kill("tool", 0, when), None
        if self.rng.random() < 0.25:
            return NEVER, self.rng.uniform(0.0, 1.5 * self.durations[phase])
        return Kill("write", self.rng.randint(1, self.writes[phase]), when), None

    async def step(self, work: Any) -> Any:
        return await asyncio.wait_for(work, STEP_TIMEOUT)

    async def timed(self, phase: str, work: Any) -> Any:
        """Run an unkilled phase here, learning how long it takes and how many writes it makes."""
        self.store.writes = 0
        began = time.monotonic()
        try:
            return await self.step(work)
        finally:
            self.durations[phase] = 0.7 * self.durations[phase] + 0.3 * (time.monotonic() - began)
            self.writes[phase] = max(self.writes[phase], self.store.writes)

    # reading the store --------------------------------------------------------------------------
    def parked(self, run: str) -> list[ParkedRun]:
        return self.queue.parked_runs(statuses=(), run=run)

    def all_request_ids(self, run: str) -> set[str]:
        return {r for p in self.parked(run) for r in p.request_ids}

    def note(self, i: int, phase: str, text: str) -> None:
        self.counts.notes.append(f"iteration {i} ({phase}): {text}")


def chaos(adapter: str, db: str, workdir: Path, iterations: int, *, seed: int = 0, seconds: float = 600.0) -> Counts:
    """Run the loop for one adapter on one database; stops starting iterations after ``seconds``."""
    world = World(adapter, db, str(workdir))  # type: ignore[arg-type]
    loop = ChaosLoop(world, seed=seed)
    try:
        return asyncio.run(loop.run(iterations, deadline=time.monotonic() + seconds))
    finally:
        loop.close()


def preload() -> None:
    """Have the fork server import the SDKs once, so each killed child starts in milliseconds."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(["tests.chaos.agents"])

"""Benchmark: one gated call's full approval round trip, crossgate (SQLite store) against the SDK's own.

    python tests/benchmarks/bench_openai.py [iterations] [variant ...]

With variant names (see ``VARIANTS``) only those run, e.g. to count one variant's fsyncs under strace.

Both sides use the same scripted model and the same tool, and the same pause, store and resume shape:

- native: ``Runner.run`` to the interruption, ``to_state().to_string()``, ``RunState.from_string``,
  ``state.approve``, ``Runner.run`` to the final answer;
- crossgate: ``Gate.run`` (policy, the request and the RunState stored together as a parked run),
  ``queue.decide``, ``Gate.resume`` (claim, restore, approve, the gated tool's binding check, mark applied,
  outcome, finish). That is six store writes; crossgate runs once per SQLite durability (``full``: three
  synced commits, the parked run with its request, the decision and the applied mark, while the claim,
  the outcome and the finish commit unsynced; ``decisions``: two, the decision and the applied mark;
  ``normal``: none) and once on the memory store; ``crossgate_traced`` is the SQLite one with an
  OpenTelemetry SDK configured (spans dropped, ``tracing_switch``), every other variant has tracing off.
  Every crossgate variant is verified, the default: the queue signs with an authority (decisions, state
  heads) and the gate pins its public key, so the resume verifies the decision and checks the state head.

The two alternate in one process, so machine noise hits both alike. Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled

from crossgate import Approve, Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from tests.adapters.openai.scripted import PlannedModel, delete_call
from tests.benchmarks.tracing_switch import sdk_provider, traced

WARMUP = 10
GOAL_RATIO = 1.10
"""The goal: crossgate's round trip (SQLite ``full``) at most 1.10× the SDK's own with its state in SQLite FULL."""
AUTHORITY = Authority.generate()


def ticket_agent(model: PlannedModel, *, needs_approval: bool) -> Agent[Any]:
    tickets = {"t3"}

    @function_tool(name_override="delete_ticket", needs_approval=needs_approval)
    async def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        tickets.discard(id)
        tickets.add(id)  # put it back, so every iteration deletes the same ticket
        return f"deleted ticket {id}"

    return Agent(name="Triage agent", tools=[delete_ticket], model=model)


def native_round_trip() -> Callable[[int], Awaitable[None]]:
    agent = ticket_agent(PlannedModel([[delete_call("t3")]]), needs_approval=True)

    async def once(i: int) -> None:
        paused = await Runner.run(agent, "Delete the spam tickets.")
        saved = paused.to_state().to_string()
        state = await RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        done = await Runner.run(agent, state)
        assert done.final_output == "done"

    return once


def round_trip_policy() -> Policy:
    """Deletes ask."""
    return Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))


def crossgate_round_trip(db: str) -> Callable[[int], Awaitable[None]]:
    queue = ReviewQueue(open_store(db), round_trip_policy(), authority=AUTHORITY)
    agent = ticket_agent(PlannedModel([[delete_call("t3")]]), needs_approval=False)
    gate = Gate(queue, sdk_agent=agent)

    async def once(i: int) -> None:
        parked = await gate.run(agent, "Delete the spam tickets.", run=f"bench-{i}")
        assert isinstance(parked, Parked)
        queue.decide(parked.request_ids[0], Approve(), reviewer="bench")
        done = await gate.resume(parked.parked_run)
        assert isinstance(done, Finished)
        assert done.result.final_output == "done"

    return once


def summary(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.fmean(samples) * 1000, statistics.median(samples) * 1000, p95 * 1000


def native_persisted_round_trip(db: str) -> Callable[[int], Awaitable[None]]:
    """The native round trip plus what an app needs to survive a restart and resume once: the state in a
    durable file at the pause, and a durable compare-and-set claim of it at the resume (two synced commits)."""
    agent = ticket_agent(PlannedModel([[delete_call("t3")]]), needs_approval=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS states (id TEXT PRIMARY KEY, state TEXT NOT NULL, claimed INTEGER NOT NULL)"
    )

    async def once(i: int) -> None:
        paused = await Runner.run(agent, "Delete the spam tickets.")
        conn.execute("INSERT INTO states VALUES (?, ?, 0)", (f"s{i}", paused.to_state().to_string()))
        claimed = conn.execute("UPDATE states SET claimed = 1 WHERE id = ? AND claimed = 0", (f"s{i}",)).rowcount
        assert claimed == 1, "resumed once"
        (saved,) = conn.execute("SELECT state FROM states WHERE id = ?", (f"s{i}",)).fetchone()
        state = await RunState.from_string(agent, saved)
        state.approve(state.get_interruptions()[0])
        done = await Runner.run(agent, state)
        assert done.final_output == "done"

    return once


VARIANTS = {
    "native": "SDK native (to_string)",
    "native_saved": "SDK native + state in SQLite, claimed",
    "crossgate": "crossgate (SQLite store)",
    "crossgate_decisions": "crossgate (SQLite, decisions)",
    "crossgate_normal": "crossgate (SQLite, normal)",
    "crossgate_memory": "crossgate (memory store)",
    "crossgate_traced": "crossgate (SQLite store), tracing on",
}


async def measure(iterations: int, folder: Path, only: list[str] | None = None) -> dict[str, list[float]]:
    os.environ.setdefault("CROSSGATE_HEAD_DIR", str(folder / "heads"))  # the gates' head files
    variants = {
        "native": native_round_trip(),
        "native_saved": native_persisted_round_trip(str(folder / "native.db")),
        "crossgate": crossgate_round_trip(str(folder / "crossgate.db")),
        "crossgate_decisions": crossgate_round_trip(f"sqlite:///{folder / 'decisions.db'}?durability=decisions"),
        "crossgate_normal": crossgate_round_trip(f"sqlite:///{folder / 'normal.db'}?durability=normal"),
        "crossgate_memory": crossgate_round_trip("memory:"),
        "crossgate_traced": traced(crossgate_round_trip(str(folder / "traced.db")), sdk_provider()[0]),
    }
    if only:
        variants = {name: variants[name] for name in only}
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(WARMUP + iterations):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))
        for name in order:
            start = time.perf_counter()
            await variants[name](i)
            elapsed = time.perf_counter() - start
            if i >= WARMUP:
                samples[name].append(elapsed)
    return samples


def main(argv: list[str] | None = None) -> None:
    """Measure both round trips and print a small table with crossgate's overhead."""
    args = sys.argv[1:] if argv is None else argv
    iterations = int(args[0]) if args else 200
    only = args[1:]
    unknown = sorted(set(only) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as folder:
        samples = asyncio.run(measure(iterations, Path(folder), only))
    rows = {name: summary(values) for name, values in samples.items()}
    print(f"approval round trip, {iterations} iterations after {WARMUP} warm-up (ms)")
    print(f"{'':<32}{'mean':>9}{'median':>9}{'p95':>9}")
    for name, label in VARIANTS.items():
        if name not in rows:
            continue
        mean, median, p95 = rows[name]
        print(f"{label:<32}{mean:>9.2f}{median:>9.2f}{p95:>9.2f}")
    crossgates = ("crossgate", "crossgate_decisions", "crossgate_normal", "crossgate_memory")
    for name, base in [(c, "native") for c in crossgates] + [(c, "native_saved") for c in crossgates[:3]]:
        if name not in rows or base not in rows:
            continue
        ratio = rows[name][1] / rows[base][1]
        verdict = ""
        if (name, base) == ("crossgate", "native_saved"):
            verdict = f"  goal <= {GOAL_RATIO:.2f}×: {'met' if ratio <= GOAL_RATIO else 'MISSED'}"
        print(f"{VARIANTS[name]} / {VARIANTS[base]} (median): {ratio:.3f}  adds {100 * (ratio - 1):+.1f}%{verdict}")
    if "crossgate" in rows and "crossgate_traced" in rows:
        ratio = rows["crossgate_traced"][1] / rows["crossgate"][1]
        print(f"tracing on / off, crossgate (SQLite store) (median): {ratio:.3f}  adds {100 * (ratio - 1):+.1f}%")
    print(f"goal: crossgate (SQLite store) / SDK native + state in SQLite, claimed <= {GOAL_RATIO:.2f}×")


if __name__ == "__main__":
    main()

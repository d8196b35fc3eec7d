"""Counts of the store work behind one gated operation: measures a loaded machine cannot blur.

    python -m tests.benchmarks.count_store [--calls 10] [--profile PATH] [--statements]

For the approval round trip (OpenAI: ``Gate.run`` to the pause, ``queue.decide``, ``Gate.resume``) and for
an allowed call through each adapter (OpenAI ``Gate.run``, LangGraph ``ToolNode`` with
``gated_tool_wrapper``, Pydantic AI ``Gate.run``), on the default SQLite store (``full``) behind a verified
gate (the queue holds an authority, the gate pins its key), it counts per operation:

- SQL statements, transactions (``BEGIN``), synced commits (``COMMIT`` under ``synchronous=FULL``) and
  ``SELECT``s, on every thread (``sql on writer``: those of them the audit writer thread ran, the group
  commit of enqueued events; which thread commits a batch depends on timing, the totals do not);
- JSON texts written and parsed (``json.dumps``/``json.loads``), pydantic JSON dumps and validations,
  by crossgate's code (the SDKs' own are not counted), and canonical JSON texts (fingerprints, event
  hashes, stored event payloads);
- signatures made and verified (EdDSA), state heads signed, file opens, renames and ``utime`` calls
  (Python's audit hooks).

The figures are counts, the same on an idle or a loaded machine. ``--profile PATH`` writes a cProfile of
the same operations (run 50 times) to PATH, to read with ``python -m pstats``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import json
import os
import sqlite3
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents import set_tracing_disabled
from pydantic import BaseModel

from crossgate import Approve, ReviewQueue, open_store
from crossgate.authority import Authority
from crossgate.authority.keys import TrustedKeys
from crossgate.runs import Finished, Parked
from crossgate.state_head import HeadSigner
from crossgate.stores.sqlite import SqliteStore

WRITER_THREAD = "crossgate-audit-writer"
Operation = Callable[[int], Awaitable[None]]


class Tally:
    """What the patched functions count while ``on``; one counter per name."""

    def __init__(self) -> None:
        self.on = False
        self.counts: Counter[str] = Counter()
        self.statements: list[str] | None = None
        """Every statement counted, when a list (``--statements``)."""

    def add(self, name: str) -> None:
        if self.on:
            self.counts[name] += 1


TALLY = Tally()


def _ours() -> bool:
    """True when the counted function's caller is crossgate's code (not the SDK's, which uses them too, nor
    the scripted models of ``crossgate_*.testing``)."""
    module = str(sys._getframe(2).f_globals.get("__name__", ""))
    return module.startswith("crossgate") and not module.endswith(".testing")


def _count(owner: Any, name: str, label: str, *, classmethod_: bool = False, ours: bool = False) -> None:
    original = getattr(owner, name)
    if classmethod_:
        function = original.__func__

        def counted_cls(cls: Any, *args: Any, **kwargs: Any) -> Any:
            if not ours or _ours():
                TALLY.add(label)
            return function(cls, *args, **kwargs)

        setattr(owner, name, classmethod(counted_cls))
        return

    def counted(*args: Any, **kwargs: Any) -> Any:
        if not ours or _ours():
            TALLY.add(label)
        return original(*args, **kwargs)

    setattr(owner, name, counted)


def _trace_connections() -> None:
    """Count every statement of every connection the SQLite store opens, by thread, with its sync level."""
    original = SqliteStore._conn
    traced: set[int] = set()

    def conn(self: SqliteStore) -> sqlite3.Connection:
        connection = original(self)
        if id(connection) not in traced:
            traced.add(id(connection))
            level = {"sync": 2}

            def trace(statement: str) -> None:
                where = "writer" if threading.current_thread().name == WRITER_THREAD else "caller"
                text = statement.strip().upper()
                if text.startswith("PRAGMA SYNCHRONOUS="):
                    level["sync"] = int(text.rsplit("=", 1)[1])
                if text.startswith("--"):  # a trigger's body: part of the statement that fired it
                    return
                TALLY.add("sql")
                if where == "writer":
                    TALLY.add("sql on writer")
                if TALLY.on and TALLY.statements is not None:
                    TALLY.statements.append(f"{where}: {' '.join(statement.split())[:150]}")
                if text.startswith("BEGIN"):
                    TALLY.add("transactions")
                elif text.startswith("COMMIT") and level["sync"] >= 2:
                    TALLY.add("synced commits")
                elif text.startswith("SELECT"):
                    TALLY.add("selects")

            connection.set_trace_callback(trace)
        return connection

    SqliteStore._conn = conn  # type: ignore[method-assign]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args and isinstance(args[0], str | Path) and not str(args[0]).endswith((".py", ".pyc")):
        TALLY.add("file opens")
    elif event in ("os.rename", "os.utime"):
        TALLY.add(f"file {event[3:]}s")


def install() -> None:
    """Patch the counted functions (once per process)."""
    _trace_connections()
    _count(json, "dumps", "json dumps", ours=True)
    _count(json, "loads", "json loads", ours=True)
    _count(
        importlib.import_module("crossgate.fingerprint")._ENCODER, "encode", "canonical json"
    )  # fingerprints, event hashes, stored payloads
    _count(BaseModel, "model_dump_json", "pydantic dump_json", ours=True)
    _count(BaseModel, "model_dump", "pydantic dump", ours=True)
    _count(BaseModel, "model_validate_json", "pydantic validate_json", classmethod_=True, ours=True)
    _count(BaseModel, "model_validate", "pydantic validate", classmethod_=True, ours=True)
    _count(Authority, "sign", "signatures made")
    _count(TrustedKeys, "verify", "signatures verified")
    _count(HeadSigner, "sign", "state heads signed")
    sys.addaudithook(_audit)


@contextmanager
def counting() -> Iterator[Counter[str]]:
    TALLY.counts = Counter()
    TALLY.on = True
    try:
        yield TALLY.counts
    finally:
        TALLY.on = False


# the operations ------------------------------------------------------------------------------------
def verified_queue(folder: Path, name: str, policy: Any) -> ReviewQueue:
    return ReviewQueue(open_store(str(folder / f"{name}.db")), policy, authority=AUTHORITY)


AUTHORITY = Authority.generate()


def round_trip_phases(queue: ReviewQueue) -> dict[str, Operation]:
    from crossgate_openai import Gate
    from tests.adapters.openai.scripted import PlannedModel, delete_call
    from tests.benchmarks.bench_openai import ticket_agent

    agent = ticket_agent(PlannedModel([[delete_call("t3")]]), needs_approval=False)
    gate = Gate(queue, sdk_agent=agent)
    parked: dict[int, Parked] = {}

    async def park(i: int) -> None:
        outcome = await gate.run(agent, "Delete the spam tickets.", run=f"count-{i}")
        assert isinstance(outcome, Parked)
        parked[i] = outcome

    async def decide(i: int) -> None:
        queue.decide(parked[i].request_ids[0], Approve(), reviewer="bench")

    async def resume(i: int) -> None:
        done = await gate.resume(parked.pop(i).parked_run)
        assert isinstance(done, Finished) and done.result.final_output == "done"

    return {"park": park, "decide": decide, "resume": resume}


def allowed_runs(queue: ReviewQueue, calls: int) -> dict[str, Operation]:
    from tests.benchmarks import bench_allowed

    return {
        "OpenAI Gate.run": bench_allowed.openai_runs(queue, calls)[1],
        "LangGraph ToolNode": bench_allowed.toolnode_runs(queue, calls)[1],
        "Pydantic AI Gate.run": bench_allowed.pydantic_ai_runs(queue, calls)[1],
    }


async def count(operation: Operation, index: int, store: Any, *, name: str = "") -> Counter[str]:
    listing = TALLY.statements
    if listing is not None:
        listing.clear()
    with counting() as counts:
        await operation(index)
        store.flush_events()  # the group commit of what it enqueued, counted with it (on the writer's line)
    if listing:
        print(f"-- {name}: {len(listing)} statements")
        print("\n".join(f"   {line}" for line in listing))
    return Counter(dict(counts))


COLUMNS = (
    "sql",
    "transactions",
    "synced commits",
    "selects",
    "sql on writer",
    "json dumps",
    "canonical json",
    "json loads",
    "pydantic dump_json",
    "pydantic validate_json",
    "pydantic validate",
    "signatures made",
    "signatures verified",
    "state heads signed",
    "file opens",
    "file renames",
    "file utimes",
)


SHORT = {
    "synced commits": "syncs",
    "canonical json": "canonical",
    "transactions": "txns",
    "sql on writer": "sql writer",
    "pydantic dump_json": "dump_json",
    "pydantic validate_json": "valid_json",
    "pydantic validate": "validate",
    "signatures made": "signed",
    "signatures verified": "verified",
    "state heads signed": "heads",
    "file renames": "renames",
    "file utimes": "utimes",
}


def print_rows(title: str, rows: dict[str, Counter[str]], per: int = 1) -> None:
    print(title)
    width = max(len(name) for name in rows) + 2
    short = [
        c.replace("synced commits", "syncs").replace("transactions", "txns").replace("pydantic ", "pyd ")
        for c in COLUMNS
    ]
    print(" " * width + "".join(f"{s[:11]:>12}" for s in short))
    for name, counts in rows.items():
        print(f"{name:<{width}}" + "".join(f"{counts[c] / per:>12.1f}" for c in COLUMNS))


async def main_async(calls: int, profile: Path | None, statements: bool) -> None:
    TALLY.statements = [] if statements else None
    with tempfile.TemporaryDirectory() as folder_text:
        folder = Path(folder_text)
        os.environ["CROSSGATE_HEAD_DIR"] = str(folder / "heads")
        from tests.benchmarks.bench_openai import round_trip_policy

        queue = verified_queue(folder, "round", round_trip_policy())
        phases = round_trip_phases(queue)
        for i in range(3):  # warm: first calls read and verify what later ones take from caches
            for phase in phases.values():
                await phase(i)
        trip: dict[str, Counter[str]] = {}
        for name, phase in phases.items():
            trip[name] = await count(phase, 3, queue.store, name=name)
        trip["round trip"] = sum(trip.values(), Counter())
        print_rows("OpenAI round trip, one approval, SQLite full, verified gate (counts per operation)", trip)
        from tests.benchmarks.bench_allowed import policy

        allowing = verified_queue(folder, "allowed", policy())
        allowed = allowed_runs(allowing, calls)
        rows: dict[str, Counter[str]] = {}
        for name, run in allowed.items():
            for i in range(3):
                await run(i)
            rows[name] = await count(run, 3, allowing.store, name=name)
        print_rows(f"allowed calls, SQLite full, verified gate (counts per call; a run of {calls})", rows, calls)
        if profile is not None:
            profiler = cProfile.Profile()
            profiler.enable()
            for i in range(10, 60):
                for phase in phases.values():
                    await phase(i)
                for run in allowed.values():
                    await run(i)
            profiler.disable()
            profiler.dump_stats(profile)
            print(f"cProfile of 50 round trips and 50 allowed runs of each adapter: {profile}")
        queue.close()
        allowing.close()


def main(argv: list[str] | None = None) -> None:
    """Print the counts."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=10, help="allowed calls per run")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the operations here")
    parser.add_argument("--statements", action="store_true", help="print every SQL statement counted")
    args = parser.parse_args(argv)
    set_tracing_disabled(True)
    install()
    asyncio.run(main_async(args.calls, args.profile, args.statements))


if __name__ == "__main__":
    main()

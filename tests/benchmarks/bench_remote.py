"""Benchmark: agents over HTTP. The gated round trip on a ``RemoteQueue`` against the same one in process,
and create + long-poll wake-up latency, on SQLite and PostgreSQL.

    python -m tests.benchmarks.bench_remote

- round trip: the OpenAI Agents SDK's delete-ticket run behind ``crossgate_openai.Gate`` (``Gate.run`` parks,
  the reviewer decides on the store, ``Gate.resume`` runs the tool), once with the gate on a ``ReviewQueue``
  over the store (in process) and once on a ``RemoteQueue`` to a ``crossgate serve`` subprocess over the same
  kind of store; the two alternate in one run, and the table gives the ratio of the medians.
- latency, agent on a ``RemoteQueue``: ``create`` is one ``POST /requests`` (an ask: the request stored); the
  agent then long-polls it, and ``wake-up`` is from the start of the reviewer's decision until the agent's
  ``wait`` returns, with the decision a reviewer's ``POST /api/requests/{id}/decision`` to the server (the
  server's own wake-up) and a decision written to the store by another process (the CLI's path: SQLite
  polls, PostgreSQL uses LISTEN/NOTIFY).

Environment: ``CG_BENCH_TRIPS`` (round trips per side, default 60), ``CG_BENCH_WAKE_ROUNDS`` (default 100),
``CG_BENCH_WARMUP`` (unmeasured rounds first, default 5), ``CROSSGATE_BENCH_POSTGRES_URL`` (else
``CROSSGATE_TEST_POSTGRES_URL``; PostgreSQL rows are skipped if neither answers). Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
from agents import set_tracing_disabled

from crossgate import Approve, ReviewQueue, ToolCall, open_store
from crossgate.adapter import AdapterQueue
from crossgate.remote import RemoteQueue
from crossgate.runs import Finished, Parked
from crossgate.testing.adapters import ASK_POLICY
from crossgate_openai import Gate
from tests.adapters.openai.scripted import PlannedModel, delete_call
from tests.benchmarks.bench_openai import ticket_agent
from tests.benchmarks.bench_stores import fresh_store, postgres_url
from tests.remote.server import AGENT_TOKEN, REVIEWERS, LiveServer

TRIPS = int(os.environ.get("CG_BENCH_TRIPS", "60"))
WAKE_ROUNDS = int(os.environ.get("CG_BENCH_WAKE_ROUNDS", "100"))
WARMUP = int(os.environ.get("CG_BENCH_WARMUP", "5"))


def quantiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


@contextmanager
def served(kind: str, pg: str | None, folder: Path) -> Iterator[tuple[LiveServer, ReviewQueue]]:
    """A ``crossgate serve`` over a fresh store of ``kind``, and the reviewer's queue on that store."""
    with fresh_store(kind, pg) as (store, url):
        store.close()
        work = Path(tempfile.mkdtemp(prefix=f"served-{kind}-", dir=folder))
        with LiveServer(work, url, ASK_POLICY) as server:
            reviewer = ReviewQueue(open_store(url), ASK_POLICY)
            try:
                yield server, reviewer
            finally:
                reviewer.close()


def round_trip(queue: AdapterQueue, reviewer: ReviewQueue) -> Callable[[int], Awaitable[None]]:
    agent = ticket_agent(PlannedModel([[delete_call("t3")]]), needs_approval=False)
    gate = Gate(queue, sdk_agent=agent)

    async def once(i: int) -> None:
        parked = await gate.run(agent, "Delete the spam tickets.", run=f"bench-{i}")
        assert isinstance(parked, Parked)
        reviewer.decide(parked.request_ids[0], Approve(), reviewer="ann")
        done = await gate.resume(parked.parked_run)
        assert isinstance(done, Finished) and done.result.final_output == "done"

    return once


async def alternate(sides: dict[str, Callable[[int], Awaitable[None]]], trips: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(WARMUP + trips):
        for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
            start = time.perf_counter()
            await sides[name](i)
            if i >= WARMUP:
                samples[name].append(time.perf_counter() - start)
    return samples


def measure_round_trips(kind: str, pg: str | None, folder: Path) -> tuple[float, float]:
    """Median round trip in process and over HTTP, in ms."""
    with fresh_store(kind, pg) as (_, local_url), served(kind, pg, folder) as (server, reviewer):
        local = ReviewQueue(open_store(local_url), ASK_POLICY)
        remote = RemoteQueue(server.url, token=AGENT_TOKEN)
        try:
            sides = {"local": round_trip(local, local), "remote": round_trip(remote, reviewer)}
            samples = asyncio.run(alternate(sides, TRIPS))
        finally:
            local.close()
            remote.close()
    return statistics.median(samples["local"]) * 1000, statistics.median(samples["remote"]) * 1000


def measure_latency(kind: str, pg: str | None, folder: Path) -> dict[str, list[float]]:
    """Create and wake-up latencies of an agent on a RemoteQueue, in seconds."""
    found: dict[str, list[float]] = {"create": [], "wake (reviewer API)": [], "wake (store, other process)": []}
    with served(kind, pg, folder) as (server, reviewer):
        remote = RemoteQueue(server.url, token=AGENT_TOKEN)
        api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {REVIEWERS['ann']}"})

        def by_api(request_id: str) -> None:
            answer = api.post(f"/api/requests/{request_id}/decision", json={"kind": "approve"})
            assert answer.status_code == 200, answer.text

        def by_store(request_id: str) -> None:
            reviewer.decide(request_id, Approve(), reviewer="ann")

        async def one(i: int, how: str, decide: Callable[[str], None]) -> None:
            call = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": f"t{i}"}, run=f"r{i}")
            start = time.perf_counter()
            request = remote.submit(call).request
            created = time.perf_counter() - start
            assert request is not None
            decided_at: list[float] = []

            def reviewer_thread() -> None:
                time.sleep(0.02)  # the long poll is held by now
                decided_at.append(time.perf_counter())
                decide(request.id)

            thread = threading.Thread(target=reviewer_thread)
            thread.start()
            answered = await remote.wait(request.id, timeout=30)
            woke = time.perf_counter()
            thread.join()
            assert answered.status.value == "decided"
            if i >= WARMUP:
                found["create"].append(created)
                found[how].append(woke - decided_at[0])

        async def rounds() -> None:
            for i in range(WARMUP + WAKE_ROUNDS):
                await one(i, "wake (reviewer API)", by_api)
                await one(i + 100_000, "wake (store, other process)", by_store)

        try:
            asyncio.run(rounds())
        finally:
            api.close()
            remote.close()
    return found


def main() -> None:
    set_tracing_disabled(True)
    pg = postgres_url()
    kinds = ["sqlite"] + (["postgres"] if pg else [])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"gated round trip (OpenAI: park, decide, resume), median of {TRIPS} each (ms)")
        print(f"{'store':<10}{'in process':>12}{'over HTTP':>12}{'ratio':>8}")
        for kind in kinds:
            local, remote = measure_round_trips(kind, pg, folder)
            print(f"{kind:<10}{local:>12.2f}{remote:>12.2f}{remote / local:>7.2f}×")
        print(f"\nagent on a RemoteQueue: create + long-poll wake-up latency, {WAKE_ROUNDS} rounds (ms)")
        print(f"{'store':<10}{'what':<30}{'p50':>9}{'p99':>9}")
        for kind in kinds:
            for what, samples in measure_latency(kind, pg, folder).items():
                p50, p99 = quantiles(samples)
                print(f"{kind:<10}{what:<30}{p50:>9.2f}{p99:>9.2f}")


if __name__ == "__main__":
    main()

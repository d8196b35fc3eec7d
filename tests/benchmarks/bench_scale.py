"""Scale benchmarks: listing with a million requests stored, and 10,000 concurrent inline waiters.

    python tests/benchmarks/bench_scale.py

- listing: ``CG_BENCH_ROWS`` requests (default 1,000,000; one in 20 pending, the rest applied) are
  bulk-loaded into a fresh SQLite file (one ``executemany`` transaction) and a fresh PostgreSQL schema
  (``COPY``), then pages of 50 are read through ``Store.list_requests`` (rows parsed into requests
  included): the newest pending page (the reviewer's inbox; target under 20 ms), the next one by cursor,
  a page from the middle by cursor, the oldest pending, the newest of any status, pending for one tool.
- waiters: ``CG_BENCH_WAITERS`` (default 10,000) coroutines in one process each wait on their own pending
  request through ``ReviewQueue.wait``; the table gives the memory each waiter costs (Python heap by
  tracemalloc, and resident set size), then the wake-up latency of ``CG_BENCH_WAKE_SAMPLE`` (default
  200) of them, decided one after another by a thread of this process and by another process while
  all the others keep waiting.

PostgreSQL comes from ``CROSSGATE_BENCH_POSTGRES_URL`` or ``CROSSGATE_TEST_POSTGRES_URL`` (skipped when
neither answers). Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import sqlite3
import statistics
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from crossgate import Approve, RequestQuery, RequestStatus, ReviewQueue, Store, ToolCall
from crossgate.clock import utc_now
from crossgate.model import ApprovalRequest
from crossgate.stores import sqlite_target
from crossgate.stores.base import encode_cursor
from tests.benchmarks.bench_stores import CTX, fresh_store, ms, percentile, postgres_url, store_kinds, table

ROWS = int(os.environ.get("CG_BENCH_ROWS", "1000000"))
WAITERS = int(os.environ.get("CG_BENCH_WAITERS", "10000"))
WAKE_SAMPLE = int(os.environ.get("CG_BENCH_WAKE_SAMPLE", "200"))
REPEATS = int(os.environ.get("CG_BENCH_LIST_REPEATS", "100"))
PENDING_EVERY = 20
TOOLS = [f"tool_{k}" for k in range(10)]
FRAMEWORKS = ["openai-agents", "claude-agent-sdk", "langgraph", "langchain"]


# bulk loading ------------------------------------------------------------------------------------
class Bodies:
    """Request JSON for every (framework, tool, status), with the id filled in per row."""

    def __init__(self) -> None:
        self._templates: dict[tuple[str, str, bool], str] = {}
        now = utc_now()
        for framework in FRAMEWORKS:
            for tool in TOOLS:
                call = ToolCall(framework=framework, tool=tool, args={"id": "t1", "note": "bulk"}, run="run-x")
                pending = ApprovalRequest(id="REQ_ID", call=call, fingerprint=call.fingerprint, created_at=now)
                applied = pending.model_copy(
                    update={
                        "status": RequestStatus.APPLIED,
                        "decision": Approve(reviewer="ann", fingerprint=call.fingerprint, decided_at=now),
                        "decided_at": now,
                        "applied_at": now,
                    }
                )
                self._templates[(framework, tool, True)] = pending.model_dump_json()
                self._templates[(framework, tool, False)] = applied.model_dump_json()

    def rows(self, n: int, *, all_pending: bool = False) -> Iterator[tuple[Any, ...]]:
        """``(id, position, status, framework, tool, agent, run, body)`` for requests 1..n."""
        for i in range(1, n + 1):
            mix = i + i // PENDING_EVERY  # spreads the pending rows over every tool and framework
            framework, tool = FRAMEWORKS[mix % 4], TOOLS[mix % 10]
            pending = all_pending or i % PENDING_EVERY == 0
            request_id = f"req_{i:032x}"
            body = self._templates[(framework, tool, pending)].replace("REQ_ID", request_id)
            yield (request_id, i, "pending" if pending else "applied", framework, tool, None, "run-x", body)


def load_sqlite(path: str, n: int, *, all_pending: bool = False) -> None:
    """Insert ``n`` requests into a SqliteStore file in one transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")  # the load only; the store reads with its own settings
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO requests (id, position, status, framework, tool, agent, run, expires_at, body)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
        Bodies().rows(n, all_pending=all_pending),
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


def load_postgres(url: str, n: int, *, all_pending: bool = False) -> None:
    """COPY ``n`` requests into a PostgresStore schema."""
    import psycopg

    from crossgate.stores.postgres import split_url

    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, options=f"-c search_path={schema}") as conn:
        with (
            conn.cursor() as cur,
            cur.copy("COPY requests (id, position, status, framework, tool, agent, run, data) FROM STDIN") as copy,
        ):
            for row in Bodies().rows(n, all_pending=all_pending):
                copy.write_row(row)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE requests")


def load(kind: str, store: Store, url: str, n: int, *, all_pending: bool = False) -> float:
    """Bulk-load ``n`` requests into a fresh store; seconds taken."""
    started = time.perf_counter()
    if kind == "sqlite":
        load_sqlite(sqlite_target(url)[0], n, all_pending=all_pending)
    elif kind == "postgres":
        load_postgres(url, n, all_pending=all_pending)
    else:
        queue = ReviewQueue(store)
        for i in range(n):
            queue.submit(ToolCall(framework="langgraph", tool=TOOLS[i % 10], args={"id": f"t{i}"}))
    return time.perf_counter() - started


# listing -----------------------------------------------------------------------------------------
def list_queries(store: Store) -> list[tuple[str, RequestQuery]]:
    """The pages the reviewer's screens ask for."""
    pending = (RequestStatus.PENDING,)
    inbox = RequestQuery(statuses=pending, limit=50)
    second = store.list_requests(inbox).next_cursor
    middle = encode_cursor(ROWS // 2)
    return [
        ("newest 50 pending (inbox)", inbox),
        ("next 50 pending, by cursor", RequestQuery(statuses=pending, limit=50, cursor=second)),
        (
            "50 pending from the middle, by cursor",
            RequestQuery(statuses=pending, limit=50, cursor=middle),
        ),
        ("oldest 50 pending", RequestQuery(statuses=pending, limit=50, newest_first=False)),
        ("newest 50, any status", RequestQuery(limit=50)),
        ("newest 50 pending for one tool", RequestQuery(statuses=pending, tool="tool_3", limit=50)),
    ]


def listing(kind: str, pg_url: str | None) -> tuple[float, list[list[str]]]:
    """Load time, and p50/p99 of each page query."""
    with fresh_store(kind, pg_url) as (store, url):
        loaded = load(kind, store, url, ROWS)
        rows = []
        for name, query in list_queries(store):
            timings = []
            for i in range(REPEATS + 5):
                started = time.perf_counter()
                page = store.list_requests(query)
                if i >= 5:
                    timings.append(time.perf_counter() - started)
            assert len(page.items) == 50, (name, len(page.items))
            rows.append([kind, name, ms(statistics.median(timings)), ms(percentile(timings, 0.99))])
        timings, plan = raw_inbox(kind, url)
        rows.append(
            [
                kind,
                "newest 50 pending, raw driver, rows unparsed",
                ms(statistics.median(timings)),
                ms(percentile(timings, 0.99)),
            ]
        )
        PLANS.append(f"{kind}: {plan}")
    return loaded, rows


PLANS: list[str] = []


def raw_inbox(kind: str, url: str) -> tuple[list[float], str]:
    """The inbox query straight through the driver (what the database costs), and its plan."""
    timings: list[float] = []
    if kind == "sqlite":
        conn = sqlite3.connect(sqlite_target(url)[0])
        text = "SELECT position, body FROM requests WHERE status IN (?) ORDER BY position DESC LIMIT ?"
        plan = " / ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + text, ("pending", 51)))
        for i in range(REPEATS + 5):
            started = time.perf_counter()
            rows = conn.execute(text, ("pending", 51)).fetchall()
            if i >= 5:
                timings.append(time.perf_counter() - started)
        conn.close()
    else:
        import psycopg

        from crossgate.stores.postgres import split_url

        conninfo, schema = split_url(url)
        with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}") as pg:
            text = "SELECT position, data FROM requests WHERE status = %s ORDER BY position DESC LIMIT %s"
            explained = pg.execute("EXPLAIN (ANALYZE, COSTS OFF) " + text, ("pending", 51)).fetchall()
            plan = " / ".join(line.strip() for (line,) in explained[:2]) + " / " + explained[-1][0].strip()
            for i in range(REPEATS + 5):
                started = time.perf_counter()
                rows = pg.execute(text, ("pending", 51)).fetchall()
                if i >= 5:
                    timings.append(time.perf_counter() - started)
    assert len(rows) == 51
    return timings, plan


# waiters -----------------------------------------------------------------------------------------
def rss_bytes() -> int:
    """Resident set size of this process now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def decider_process(url: str, request_ids: list[str], outbox: Any) -> None:
    """Another process: decide each request in turn and report when each decide started."""
    from crossgate import open_store

    queue = ReviewQueue(open_store(url))
    queue.get(request_ids[0])  # open the pool before the clock starts
    for request_id in request_ids:
        started = time.perf_counter()
        queue.decide(request_id, Approve(), reviewer="bob")
        outbox.put((request_id, started))
    outbox.put(None)
    queue.close()


def waiters(kind: str, pg_url: str | None) -> list[list[str]]:
    """Memory per waiter and wake-up latency with ``WAITERS`` coroutines waiting in this process."""
    with fresh_store(kind, pg_url) as (store, url):
        load(kind, store, url, WAITERS, all_pending=True)
        queue = ReviewQueue(store)
        ids = [r.id for r in queue.pending()]
        assert len(ids) == WAITERS
        return asyncio.run(_wait_all(kind, queue, url, ids))


async def _wait_all(kind: str, queue: ReviewQueue, url: str, ids: list[str]) -> list[list[str]]:
    woke: dict[str, float] = {}

    async def wait(request_id: str) -> None:
        request = await queue.wait(request_id, timeout=3600)
        if request.status is RequestStatus.DECIDED:
            woke[request_id] = time.perf_counter()

    gc.collect()
    tracemalloc.start()
    heap_before, rss_before = tracemalloc.get_traced_memory()[0], rss_bytes()
    tasks = [asyncio.create_task(wait(request_id)) for request_id in ids]
    while queue.waiting < len(ids):  # noqa: ASYNC110 - the registry has no event for "all registered"
        await asyncio.sleep(0.01)
    heap = (tracemalloc.get_traced_memory()[0] - heap_before) / len(ids)
    rss = (rss_bytes() - rss_before) / len(ids)
    tracemalloc.stop()
    rows = [[kind, f"{len(ids):,}", f"{heap / 1024:.1f} KiB", f"{rss / 1024:.1f} KiB", "", "", ""]]

    sample = ids[:WAKE_SAMPLE]
    started: dict[str, float] = {}

    def decide_all() -> None:
        for request_id in sample:
            started[request_id] = time.perf_counter()
            queue.decide(request_id, Approve(), reviewer="ann")

    await asyncio.to_thread(decide_all)
    while len(woke) < len(sample):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    lat = [woke[r] - started[r] for r in sample]
    rows.append([kind, "", "", "", "same-process decisions", ms(statistics.median(lat)), ms(percentile(lat, 0.99))])

    if kind != "memory":
        sample = ids[WAKE_SAMPLE : 2 * WAKE_SAMPLE]
        outbox = CTX.Queue()
        decider = CTX.Process(target=decider_process, args=(url, sample, outbox))
        decider.start()
        remote: dict[str, float] = {}
        while (item := await asyncio.to_thread(outbox.get, True, 120)) is not None:
            remote[item[0]] = item[1]
        decider.join(60)
        while not all(r in woke for r in sample):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        lat = [woke[r] - remote[r] for r in sample]
        rows.append(
            [kind, "", "", "", "other-process decisions", ms(statistics.median(lat)), ms(percentile(lat, 0.99))]
        )
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    queue._waits.close()
    return rows


def main() -> None:
    pg_url = postgres_url()
    kinds = store_kinds(pg_url)
    print(f"# crossgate scale benchmarks ({os.cpu_count()} CPUs)\n")
    rows: list[list[str]] = []
    loads = []
    for kind in kinds:
        loaded, kind_rows = listing(kind, pg_url)
        loads.append(f"{kind}: {ROWS:,} requests loaded in {loaded:.1f} s")
        rows.extend(kind_rows)
    print(f"## listing a page of 50 with {ROWS:,} requests stored ({ROWS // PENDING_EVERY:,} pending) (ms)\n")
    print("; ".join(loads) + "\n")
    print(table(["store", "page", "p50", "p99"], rows) + "\n")
    print("Plans of the inbox query: " + "; ".join(PLANS) + "\n")

    rows = []
    for kind in ["memory", *kinds]:
        rows.extend(waiters(kind, pg_url))
    print(f"## {WAITERS:,} concurrent inline waiters in one process; wake-up of {WAKE_SAMPLE} decided ones (ms)\n")
    print(table(["store", "waiters", "heap per waiter", "RSS per waiter", "wake-up of", "p50", "p99"], rows))


if __name__ == "__main__":
    main()

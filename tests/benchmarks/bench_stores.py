"""Store benchmarks: submit+decide+apply throughput against a raw driver loop, and wake-up latency.

    python tests/benchmarks/bench_stores.py

For SQLite and PostgreSQL:

- throughput: requests per second through ``ReviewQueue`` (submit, decide approve, mark applied: three
  transactions each with its audit event) against a raw sqlite3 / psycopg loop doing the same three
  transactions with the same rows, the same chain-head lock and the same durability settings (SQLite
  WAL with ``synchronous=FULL``; PostgreSQL ``synchronous_commit=on``). The two alternate in short rounds
  in one run, so machine noise hits both alike; the table gives the ratio. SQLite also runs with the
  store's lighter durabilities (``sqlite-decisions``: the submit commits with ``synchronous=NORMAL``, the
  decision and the applied mark with FULL; ``sqlite-normal``: all NORMAL), the raw loop matching each.
- wake-up latency, from the start of ``decide`` until the waiting ``ReviewQueue.wait`` returns: with the
  waiter in the deciding process, in another process (where the store provides the wake-up: SQLite
  polls, PostgreSQL uses LISTEN/NOTIFY), and in another process while the decision is a reviewer's
  POST to a ``crossgate serve`` process.

Environment: ``CROSSGATE_BENCH_POSTGRES_URL`` (else ``CROSSGATE_TEST_POSTGRES_URL``; PostgreSQL rows are
skipped if neither answers), ``CG_BENCH_REQUESTS`` (requests per side per store, default 150),
``CG_BENCH_WAKE_ROUNDS`` (default 200). Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from crossgate import Approve, ReviewQueue, Store, ToolCall, open_store
from crossgate.clock import utc_now
from crossgate.model import ApprovalRequest, RequestStatus

REQUESTS = int(os.environ.get("CG_BENCH_REQUESTS", "150"))
WAKE_ROUNDS = int(os.environ.get("CG_BENCH_WAKE_ROUNDS", "200"))
ROUNDS = 5
CTX = multiprocessing.get_context("spawn")


# stores ------------------------------------------------------------------------------------------
def postgres_url() -> str | None:
    """The PostgreSQL server to benchmark against, if one is configured and answers."""
    url = os.environ.get("CROSSGATE_BENCH_POSTGRES_URL") or os.environ.get("CROSSGATE_TEST_POSTGRES_URL")
    if not url:
        return None
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        print(f"PostgreSQL at {url} does not answer ({exc}); skipping it", file=sys.stderr)
        return None
    return url


@contextmanager
def fresh_store(kind: str, pg_url: str | None = None) -> Iterator[tuple[Store, str]]:
    """A set-up store of ``kind`` on a fresh file or schema, and the URL that reopens it; removed after."""
    if kind == "memory":
        yield open_store("memory:"), "memory:"
        return
    if kind.startswith("sqlite"):
        durability = kind.partition("-")[2] or "full"
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'bench.db'}?durability={durability}"
            store = open_store(url)
            yield store, url
            store.close()
        return
    assert pg_url is not None
    import psycopg
    from psycopg import sql

    from crossgate.stores.postgres import PostgresStore

    schema = f"cg_bench_{os.getpid()}_{int(time.time() * 1000) % 10**8}"
    pg = PostgresStore(pg_url, schema=schema)
    pg.setup()
    try:
        yield pg, pg.url
    finally:
        pg.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def store_kinds(pg_url: str | None, *, memory: bool = False) -> list[str]:
    """Store kinds to benchmark, in table order."""
    return (["memory"] if memory else []) + ["sqlite"] + (["postgres"] if pg_url else [])


SQLITE_DURABILITIES = ("sqlite-decisions", "sqlite-normal")
"""Extra throughput rows: SqliteStore with a lighter durability (``sqlite`` alone is ``full``)."""
FULL, NORMAL = 2, 1
RAW_SYNC = {"sqlite": (FULL, FULL, FULL), "sqlite-decisions": (NORMAL, FULL, FULL), "sqlite-normal": (NORMAL,) * 3}
"""``PRAGMA synchronous`` of the raw loop's submit, decide and apply transactions, as the store sets them."""


# throughput --------------------------------------------------------------------------------------
def call(i: int) -> ToolCall:
    """The call every throughput loop submits."""
    return ToolCall(framework="langgraph", tool="delete_ticket", args={"id": f"t{i}"}, run="run-1", agent="triage")


def queue_loop(queue: ReviewQueue, start: int, n: int) -> None:
    """The measured path: submit, approve and apply through the queue."""
    for i in range(start, start + n):
        request = queue.submit(call(i)).request
        assert request is not None
        queue.decide(request.id, Approve(), reviewer="ann")
        queue.mark_applied(request.id, args={"id": f"t{i}"})


class RawRows:
    """The rows the queue writes for one request, serialised once: the raw loops write the same bytes."""

    def __init__(self, i: int) -> None:
        pending = ApprovalRequest(id=f"raw_{i}", call=call(i), fingerprint=call(i).fingerprint, created_at=utc_now())
        decided = pending.model_copy(
            update={"status": RequestStatus.DECIDED, "decision": Approve(reviewer="ann"), "decided_at": utc_now()}
        )
        applied = decided.model_copy(update={"status": RequestStatus.APPLIED, "applied_at": utc_now()})
        self.id = pending.id
        self.bodies = [pending.model_dump_json(), decided.model_dump_json(), applied.model_dump_json()]
        self.payload = json.dumps({"framework": "langgraph", "tool": "delete_ticket", "args": {"id": f"t{i}"}})


def _chain(prev: str, payload: str) -> str:
    return hashlib.sha256((prev + payload).encode()).hexdigest()


def raw_sqlite_loop(conn: sqlite3.Connection, start: int, n: int, levels: tuple[int, ...]) -> None:
    """Three ``BEGIN IMMEDIATE`` transactions per request on the SqliteStore schema, like the store's."""
    at = utc_now().isoformat()
    current = conn.execute("PRAGMA synchronous").fetchone()[0]
    for i in range(start, start + n):
        rows = RawRows(i)
        for step, (kind, body) in enumerate(zip(("submitted", "decided", "applied"), rows.bodies, strict=True)):
            if levels[step] != current:
                conn.execute(f"PRAGMA synchronous={levels[step]}")
                current = levels[step]
            conn.execute("BEGIN IMMEDIATE")
            if step == 0:
                conn.execute(
                    "INSERT INTO requests (id, status, framework, tool, agent, run, expires_at, body)"
                    " VALUES (?, 'pending', 'langgraph', 'delete_ticket', 'triage', 'run-1', NULL, ?)",
                    (rows.id, body),
                )
            else:
                expected = "pending" if step == 1 else "decided"
                conn.execute(
                    "UPDATE requests SET status = ?, expires_at = NULL, body = ? WHERE id = ? AND status IN (?)",
                    (kind, body, rows.id, expected),
                )
            seq, prev = conn.execute("SELECT seq, hash FROM audit_head WHERE one = 1").fetchone()
            digest = _chain(prev, rows.payload)
            conn.execute(
                "INSERT INTO events (seq, at, kind, request_id, run, actor, channel, payload, prev_hash, hash)"
                " VALUES (?, ?, ?, ?, 'run-1', 'ann', 'api', ?, ?, ?)",
                (seq + 1, at, kind, rows.id, rows.payload, prev, digest),
            )
            conn.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE one = 1", (seq + 1, digest))
            conn.execute("COMMIT")


def raw_postgres_loop(conn: Any, start: int, n: int) -> None:
    """Three transactions per request on the PostgresStore schema, with the chain head locked FOR UPDATE."""
    at = utc_now()
    for i in range(start, start + n):
        rows = RawRows(i)
        for step, (kind, body) in enumerate(zip(("submitted", "decided", "applied"), rows.bodies, strict=True)):
            with conn.transaction():
                if step == 0:
                    seq, prev = conn.execute("SELECT seq, hash FROM audit_head FOR UPDATE").fetchone()
                    conn.execute(
                        "INSERT INTO requests (id, position, status, framework, tool, agent, run, expires_at, data)"
                        " VALUES (%s, %s, 'pending', 'langgraph', 'delete_ticket', 'triage', 'run-1', NULL, %s)",
                        (rows.id, seq + 1, body),
                    )
                else:
                    expected = ["pending"] if step == 1 else ["decided"]
                    conn.execute(
                        "UPDATE requests SET status = %s, expires_at = NULL, data = %s"
                        " WHERE id = %s AND status = ANY(%s) RETURNING position",
                        (kind, body, rows.id, expected),
                    ).fetchone()
                    seq, prev = conn.execute("SELECT seq, hash FROM audit_head FOR UPDATE").fetchone()
                digest = _chain(prev, rows.payload)
                conn.execute(
                    "WITH head AS (UPDATE audit_head SET seq = %(seq)s, hash = %(hash)s RETURNING seq), "
                    "event AS (INSERT INTO events (seq, at, kind, request_id, data) "
                    "VALUES (%(seq)s, %(at)s, %(kind)s, %(id)s, %(data)s) RETURNING seq) "
                    "SELECT pg_notify(%(channel)s, event.seq::text) FROM event, head",
                    {
                        "seq": seq + 1,
                        "hash": digest,
                        "at": at,
                        "kind": kind,
                        "id": rows.id,
                        "data": rows.payload,
                        "channel": "crossgate_raw",
                    },
                )


def raw_connection(kind: str, url: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """The raw loop for ``kind`` bound to its own connection on a fresh copy of the store's schema."""
    if kind.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///").partition("?")[0], isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return (lambda start, n: raw_sqlite_loop(conn, start, n, RAW_SYNC[kind])), conn.close
    import psycopg

    from crossgate.stores.postgres import split_url

    conninfo, schema = split_url(url)
    pg = psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema} -c TimeZone=UTC")
    return (lambda start, n: raw_postgres_loop(pg, start, n)), pg.close


def throughput(kind: str, pg_url: str | None) -> dict[str, float]:
    """Requests per second through the queue and through the raw loop, alternating in rounds."""
    per_round = max(1, REQUESTS // ROUNDS)
    spent = {"queue": 0.0, "raw": 0.0}
    with fresh_store(kind, pg_url) as (store, _), fresh_store(kind, pg_url) as (raw_store, raw_url):
        queue = ReviewQueue(store)
        raw, close = raw_connection(kind, raw_url)
        queue_loop(queue, 10**6, 5)  # warm up both: connections, prepared statements
        raw(10**6, 5)
        for r in range(ROUNDS):
            started = time.perf_counter()
            queue_loop(queue, r * per_round, per_round)
            spent["queue"] += time.perf_counter() - started
            started = time.perf_counter()
            raw(r * per_round, per_round)
            spent["raw"] += time.perf_counter() - started
        assert queue.verify_audit().ok
        close()
        queue._waits.close()
        raw_store.close()
    done = per_round * ROUNDS
    return {"queue": done / spent["queue"], "raw": done / spent["raw"], "n": done}


# wake-up latency ---------------------------------------------------------------------------------
def _submit(queue: ReviewQueue, i: int) -> str:
    request = queue.submit(call(i)).request
    assert request is not None
    return request.id


def in_process_wakeups(kind: str, pg_url: str | None, decide_times: list[float]) -> list[float]:
    """Seconds from the start of ``decide`` (in a thread) to the waiting coroutine's return."""
    with fresh_store(kind, pg_url) as (store, _):
        queue = ReviewQueue(store)

        async def main() -> list[float]:
            latencies: list[float] = []
            for i in range(WAKE_ROUNDS):
                request_id = _submit(queue, i)
                waiter = asyncio.create_task(queue.wait(request_id, timeout=10))
                await asyncio.sleep(0.005)
                started: list[float] = []

                def decide(rid: str = request_id, mark: list[float] = started) -> None:
                    mark.append(time.perf_counter())
                    queue.decide(rid, Approve(), reviewer="ann")
                    mark.append(time.perf_counter())

                thread = threading.Thread(target=decide)
                thread.start()
                result = await waiter
                woke = time.perf_counter()
                thread.join()
                assert result.status is RequestStatus.DECIDED
                latencies.append(woke - started[0])
                decide_times.append(started[1] - started[0])
            return latencies

        try:
            return asyncio.run(main())
        finally:
            queue._waits.close()


def waiter_process(url: str, inbox: Any, outbox: Any) -> None:
    """Process B: wait for each request id from ``inbox`` and report when the wait returned."""
    queue = ReviewQueue(open_store(url))

    async def main() -> None:
        while (request_id := await asyncio.to_thread(inbox.get)) is not None:
            outbox.put("waiting")
            request = await queue.wait(request_id, timeout=10)
            outbox.put((request.status.value, time.perf_counter()))

    asyncio.run(main())
    queue.close()


def cross_process_wakeups(kind: str, pg_url: str | None, decide_times: list[float]) -> list[float]:
    """Seconds from the start of ``decide`` in this process to the return of ``wait`` in another."""
    with fresh_store(kind, pg_url) as (store, url):
        queue = ReviewQueue(store)
        try:
            return _wake_rounds(queue, url, lambda rid: queue.decide(rid, Approve(), reviewer="ann"), decide_times)
        finally:
            queue._waits.close()


SERVER_TOKEN = "bench-token-0001"


def server_wakeups(kind: str, pg_url: str | None, decide_times: list[float]) -> list[float]:
    """Seconds from a reviewer's POST to ``crossgate serve`` (process A) to the return of ``wait`` in process B."""
    import httpx

    with fresh_store(kind, pg_url) as (store, url):
        queue = ReviewQueue(store)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {**os.environ, "CROSSGATE_TOKENS": f"ann:{SERVER_TOKEN}"}
        # The server's host is not the benchmark's: a first run pins its key in a config directory of its own.
        home = Path(tempfile.mkdtemp(prefix="crossgate-bench-serve-"))
        env.update(XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
        command = [sys.executable, "-m", "crossgate.cli", "serve", "--db", url, "--port", str(port)]
        server = subprocess.Popen([*command, "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {SERVER_TOKEN}"})
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get("/api/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.1)

            def decide(request_id: str) -> None:
                response = client.post(f"/api/requests/{request_id}/decision", json={"kind": "approve"})
                response.raise_for_status()

            return _wake_rounds(queue, url, decide, decide_times)
        finally:
            client.close()
            server.send_signal(signal.SIGINT)
            server.wait(15)
            shutil.rmtree(home, ignore_errors=True)
            queue._waits.close()


def _wake_rounds(
    queue: ReviewQueue, url: str, decide: Callable[[str], object], decide_times: list[float]
) -> list[float]:
    inbox, outbox = CTX.Queue(), CTX.Queue()
    waiter = CTX.Process(target=waiter_process, args=(url, inbox, outbox))
    waiter.start()
    latencies: list[float] = []
    try:
        for i in range(WAKE_ROUNDS):
            request_id = _submit(queue, i)
            inbox.put(request_id)
            assert outbox.get(timeout=60) == "waiting"
            time.sleep(0.02)  # the waiter registers before the decision lands
            started = time.perf_counter()
            decide(request_id)
            decide_times.append(time.perf_counter() - started)
            status, woke = outbox.get(timeout=30)
            assert status == "decided"
            latencies.append(woke - started)
    finally:
        inbox.put(None)
        waiter.join(30)
    return latencies


# reporting ---------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    """Milliseconds with two decimals."""
    return f"{seconds * 1000:.2f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main() -> None:
    pg_url = postgres_url()
    kinds = store_kinds(pg_url)
    print(
        f"# crossgate store benchmarks ({os.cpu_count()} CPUs, {REQUESTS} requests per side, "
        f"{WAKE_ROUNDS} wake-up rounds)\n"
    )
    rows = []
    for kind in [*kinds, *SQLITE_DURABILITIES]:
        result = throughput(kind, pg_url)
        rows.append([kind, f"{result['queue']:.1f}", f"{result['raw']:.1f}", f"{result['queue'] / result['raw']:.2f}"])
    print("## submit + decide + apply throughput (requests/s; each request is three transactions)\n")
    print(table(["store", "ReviewQueue", "raw driver loop", "ratio"], rows) + "\n")

    rows = []
    for kind in ["memory", *kinds]:
        for where, measure in (
            ("same process", in_process_wakeups),
            ("other process", cross_process_wakeups),
            ("other process, decided through crossgate serve", server_wakeups),
        ):
            if kind == "memory" and where != "same process":
                continue
            decide_times: list[float] = []
            lat = measure(kind, pg_url, decide_times)
            p50, p99 = statistics.median(lat), percentile(lat, 0.99)
            rows.append([kind, where, ms(p50), ms(p99), ms(max(lat)), ms(statistics.median(decide_times))])
    print("## wake-up latency: start of decide until the waiter's wait returns (ms)\n")
    print(table(["store", "waiter", "p50", "p99", "max", "decide call alone, p50"], rows))


if __name__ == "__main__":
    main()

"""Many writers on one PostgreSQL chain head: decisions per second, statements, commits and lock waits.

    python tests/benchmarks/bench_pg_writers.py [--threads 40] [--seconds 5] [--processes 1] [--partitions 1,8]

Each of ``--processes`` processes runs ``--threads`` threads, each its own reviewer and resumer of its
own run: submit a call the policy asks about, approve it, mark it applied (three audited writes, as a
gate and a reviewer make them), in a loop for ``--seconds``. One fresh schema of a database of its own
(``crossgate_bench_writers``, created on the server of ``CG_BENCH_POSTGRES_URL`` or
``CROSSGATE_TEST_POSTGRES_URL``), so the database's counters are this run's alone. Prints, per round:
decisions per second, the statements the store sent per decision (every ``execute`` of its
connections), the database's transactions per decision, reads included (``pg_stat_database.xact_commit``),
the WAL syncs per decision (``pg_stat_wal.wal_sync``, the whole server: other load counts too) and the mean
number of this database's backends waiting for a lock (``pg_locks``, sampled every 10 ms): all of them,
those waiting for the chain head's row, and those waiting for the server-wide lock that a transaction
sending a NOTIFY holds through its commit. It imports whatever ``crossgate`` is first on the path, so two
checkouts run it in turn give a before and an after (``--label`` names the row). ``--partitions`` runs one
round per number of audit chains given, in turn (migration 013; each on a fresh schema), and prints each
round's decisions per second as a ratio to the first round's. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from crossgate import Approve, ReviewQueue, ToolCall  # noqa: E402
from crossgate.stores.postgres import PostgresStore  # noqa: E402

SERVER = os.environ.get("CG_BENCH_POSTGRES_URL") or os.environ.get("CROSSGATE_TEST_POSTGRES_URL", "")
DATABASE = "crossgate_bench_writers"


def database_url() -> str:
    """The benchmark's own database on SERVER, created when missing."""
    base, _, _ = SERVER.rpartition("/")
    with psycopg.connect(SERVER, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    return f"{base}/{DATABASE}"


def writer(url: str, schema: str, threads: int, seconds: float, tag: str, out: Any) -> None:
    """``threads`` threads deciding their own requests for ``seconds``; puts (decisions, statements)."""
    store = PostgresStore(url, schema=schema, max_size=threads + 2)
    queue = ReviewQueue(store)
    counts = {"statements": 0}
    lock = threading.Lock()
    original = psycopg.Cursor.execute  # Connection.execute goes through it too

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            counts["statements"] += 1
        return original(self, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    done = [0] * threads
    start = time.time() + 0.5
    stop_at = start + seconds

    def work(i: int) -> None:
        n = 0
        while time.time() < start:
            time.sleep(0.01)
        while time.time() < stop_at:
            n += 1
            call = ToolCall(
                framework="langgraph", tool="delete_ticket", args={"id": f"{tag}-{i}-{n}"}, run=f"{tag}-{i}"
            )
            request = queue.submit(call).request
            assert request is not None
            queue.decide(request.id, Approve(), reviewer=f"r{i}")
            queue.mark_applied(request.id, args=request.call.args)
            done[i] += 1

    while time.time() < start - 0.4:
        time.sleep(0.01)
    before = counts["statements"]
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.put((sum(done), counts["statements"] - before))
    queue.close()


def counters(url: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        commits = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (DATABASE,)).fetchone()
        syncs = conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()
    assert commits is not None and syncs is not None
    return int(commits[0]), int(syncs[0])


WAITS = {
    "head": "l.locktype IN ('transactionid', 'tuple')",  # a row lock: the chain head (or a request) held by another
    "notify": "l.locktype = 'object' AND l.classid = 'pg_database'::regclass AND l.objid = 0",
}
"""What a waiting backend waits for: the chain head's row (held by the transaction that locked it), or the
lock on "database 0" that every transaction sending a NOTIFY holds from its pre-commit until after its commit
(PostgreSQL's async.c: it keeps notifications in commit order, and it is one lock for the whole server)."""


def lock_waiters(url: str, stop: threading.Event, samples: list[tuple[int, int, int]]) -> None:
    """Sample, every 10 ms, how many of this database's backends wait: for any lock, the head, the NOTIFY lock."""
    query = (
        "SELECT count(*), count(*) FILTER (WHERE {head}), count(*) FILTER (WHERE {notify})"
        " FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted AND a.datname = %s"
    ).format(**WAITS)
    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.is_set():
            row = conn.execute(query.encode(), (DATABASE,)).fetchone()
            samples.append((int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0))
            time.sleep(0.01)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--label", default="")
    parser.add_argument("--partitions", default="", help="comma-separated N to run in turn, e.g. 1,8")
    args = parser.parse_args()
    if not SERVER:
        print("no PostgreSQL: set CG_BENCH_POSTGRES_URL")
        return 0
    url = database_url()
    rounds: list[int | None] = [int(n) for n in args.partitions.split(",") if n] or [None]
    first: float | None = None
    failed = False
    for n in rounds:
        rate, ok = one_round(url, args, n)
        failed = failed or not ok
        first = rate if first is None else first
        if len(rounds) > 1:
            print(f"  partitions={n}: {rate / first:.2f}x the first round")
    return 1 if failed else 0


def one_round(url: str, args: argparse.Namespace, partitions: int | None) -> tuple[float, bool]:
    """One timed round on a fresh schema with ``partitions`` chains (the store's default when None)."""
    schema = f"bench_writers_{os.getpid()}_{partitions or 0}"
    options = {} if partitions is None else {"partitions": partitions}
    store = PostgresStore(url, schema=schema, **options)
    store.setup()
    store.close()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    (commits0, syncs0), stop = counters(url), threading.Event()
    samples: list[tuple[int, int, int]] = []
    sampler = threading.Thread(target=lock_waiters, args=(url, stop, samples))
    sampler.start()
    procs = [
        ctx.Process(target=writer, args=(url, schema, args.threads, args.seconds, f"p{k}", out))
        for k in range(args.processes)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=args.seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    stop.set()
    sampler.join()
    commits1, syncs1 = counters(url)
    decisions = sum(r[0] for r in results) or 1
    statements = sum(r[1] for r in results)
    check = PostgresStore(url, schema=schema)
    verified = ReviewQueue(check).verify_audit().ok
    check.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    label = args.label or "run"
    if partitions is not None:
        label = f"{label} partitions={partitions}"
    print(
        f"{label}: {args.processes} x {args.threads} writers, {args.seconds:.0f} s:"
        f" {decisions / args.seconds:.1f} decisions/s (submit + decide + apply each);"
        f" per decision {statements / decisions:.1f} statements, {(commits1 - commits0) / decisions:.2f} transactions,"
        f" {(syncs1 - syncs0) / decisions:.2f} WAL syncs (server-wide);"
        f" backends waiting for a lock {_mean(samples, 0):.1f} on average"
        f" (the head {_mean(samples, 1):.1f}, NOTIFY's {_mean(samples, 2):.1f});"
        f" chain verifies: {verified}; load {os.getloadavg()[0]:.1f}"
    )
    return decisions / args.seconds, verified


def _mean(samples: list[tuple[int, int, int]], column: int) -> float:
    return sum(sample[column] for sample in samples) / max(1, len(samples))


if __name__ == "__main__":
    sys.exit(main())

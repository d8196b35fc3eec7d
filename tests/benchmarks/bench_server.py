"""Review server load: many concurrent reviewers and submitters against ``crossgate serve`` on 127.0.0.1.

    python tests/benchmarks/bench_server.py

Each row runs one server process (uvicorn) on a fresh database, one submitter process that keeps a
backlog of pending requests (``ReviewQueue.submit`` on the same database, as agents do), two applier
threads racing to mark decided requests applied (as resuming adapters do), and ``CG_BENCH_CLIENTS``
reviewers (default 50), each with its own token, each looping: list pending (oldest first), pick one,
approve it. A row is ``<store>-<mode>`` or ``<store>-<mode>-x2``: the store is ``sqlite`` (a file) or
``postgres`` (a fresh schema at ``CG_BENCH_POSTGRES_URL``, else ``CROSSGATE_TEST_POSTGRES_URL``); in
mode ``racing`` every reviewer lists every pending request and they race for them (the losers get
409); in mode ``own`` each reviewer lists and decides only the requests of its own run. ``-x2`` runs two
servers on the one database, the reviewers split between them, and prints its decisions per second
against the same row's one-server figure. ``CG_BENCH_ROWS`` (comma-separated) picks the rows; by
default ``sqlite-racing,sqlite-own`` and, with a PostgreSQL URL, ``postgres-own,postgres-racing,postgres-own-x2``.

Each one-server row is followed by the same load against the bare baseline (``bare_server.py``: FastAPI
and uvicorn, the same two routes, a decision is one durable compare-and-set ``UPDATE`` on the same
database kind: SQLite ``synchronous=FULL``, PostgreSQL ``synchronous_commit`` on; its submitter inserts
rows, its appliers compare-and-set them applied), unless ``CG_BENCH_BARE=0``, and the ratios crossgate /
bare of decisions per second and decide latency ("n/a" when a side made no decision).

Reports decisions per second, p50/p99 latency of the decision and list calls, the CPU per decision of the
server and of the reviewers, and the size of a list page; ``CG_BENCH_BARE_BODIES=1`` gives the bare app
pages of crossgate's size (a measured variant, see ``bare_server.py``). It checks the
invariants: every request submitted is in the store (none lost), every 200 answer is exactly one
``decided`` event (none doubled), every decided request is applied exactly once, the audit chain
verifies. Environment: ``CG_BENCH_SECONDS`` (default 30), ``CG_BENCH_CLIENTS`` (default 50),
``CG_BENCH_BACKLOG`` (pending requests the submitter keeps, default 200), ``CG_BENCH_PREFILL`` (requests
submitted before the clock starts, by two processes, default 120 per reviewer), ``CG_BENCH_PARTITIONS``
(how many audit chains crossgate's PostgreSQL schema gets; the store's default when unset). The prefill keeps the
figure a measure of the server: the one submitter makes only tens of PostgreSQL submissions a second
under this load, fewer than the reviewers decide, and without it crossgate's reviewers waited on empty
pages (the bare app's submitter is a plain ``INSERT``). Empty pages are counted and printed.
Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import collections
import math
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from crossgate import ReviewQueue, ToolCall, open_store  # noqa: E402
from crossgate.errors import AlreadyAppliedError  # noqa: E402
from crossgate.model import DECIDED_STATUSES, RequestStatus  # noqa: E402
from crossgate.server.access import Caller  # noqa: E402
from crossgate.server.api import request_view  # noqa: E402
from crossgate.server.settings import Reviewer  # noqa: E402
from crossgate.stores import RequestQuery  # noqa: E402
from tests.benchmarks import bare_server  # noqa: E402

SECONDS = float(os.environ.get("CG_BENCH_SECONDS", "30"))
CLIENTS = int(os.environ.get("CG_BENCH_CLIENTS", "50"))
BACKLOG = int(os.environ.get("CG_BENCH_BACKLOG", "200"))
PREFILL = int(os.environ.get("CG_BENCH_PREFILL", str(120 * CLIENTS)))
FILL_NUMBERS = 10**8  # filler k numbers its requests from k * FILL_NUMBERS (the live submitter's from 1)
FRAMEWORKS = ("openai-agents", "claude-agent-sdk", "langgraph")
POSTGRES_URL = os.environ.get("CG_BENCH_POSTGRES_URL") or os.environ.get("CROSSGATE_TEST_POSTGRES_URL", "")
PARTITIONS = os.environ.get("CG_BENCH_PARTITIONS", "")
"""How many audit chains crossgate's PostgreSQL schemas get (the store's default when unset)."""
DEFAULT_ROWS = "sqlite-racing,sqlite-own" + (",postgres-own,postgres-racing,postgres-own-x2" if POSTGRES_URL else "")
ROWS = [r.strip() for r in os.environ.get("CG_BENCH_ROWS", DEFAULT_ROWS).split(",") if r.strip()]


def own_run(n: int) -> str:
    """The run of request ``n`` in mode ``own``: reviewer ``n % CLIENTS`` decides it."""
    return f"own-{n % CLIENTS:03d}"


def ratio(ours: float, theirs: float) -> str:
    """``ours / theirs`` as ``1.23x``, or ``n/a`` when either is zero or not a number (tiny runs)."""
    if not theirs or not ours or math.isnan(ours) or math.isnan(theirs):
        return "n/a"
    return f"{ours / theirs:.2f}x"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def submitter(db: str, stop_at: float, counter: Any, mode: str = "racing", fill: int = 0, filler: int = 0) -> None:
    """Keep about BACKLOG requests pending until ``stop_at``; count what was submitted. With ``fill``,
    submit that many (numbered apart from the live submitter's and the other ``filler``'s) and return: the
    backlog made before the clock starts, by two processes."""
    queue = ReviewQueue(open_store(db))
    n = filler * FILL_NUMBERS
    while fill or time.time() < stop_at:
        pending = len(queue.list_requests(RequestQuery(statuses=(RequestStatus.PENDING,), limit=500)).items)
        for _ in range(fill or max(0, BACKLOG - pending)):
            n += 1
            run = own_run(n) if mode == "own" else f"run-{n % 17}"
            call = ToolCall(framework=FRAMEWORKS[n % 3], tool="delete_ticket", args={"id": f"T-{n}"}, run=run)
            queue.submit(call)
            with counter.get_lock():
                counter.value += 1
        if fill:
            break
        time.sleep(0.05)
    queue.close()


def request_body(n: int, run: str, request_id: str) -> str:
    """The JSON of request ``n`` as crossgate's list returns it, under the bare app's ``request_id`` and
    fingerprint (for the bare app's equal-bodies variant)."""
    queue = ReviewQueue(open_store("memory:"))
    call = ToolCall(framework=FRAMEWORKS[n % 3], tool="delete_ticket", args={"id": f"T-{n}"}, run=run)
    request = queue.submit(call).request
    queue.close()
    assert request is not None
    caller = Caller(Reviewer(name="r00", token_sha256=""), channel="api")
    view = request_view(request, caller).model_copy(update={"id": request_id, "fingerprint": request_id})
    return view.model_dump_json()


def bare_submitter(db: str, stop_at: float, counter: Any, mode: str = "racing", fill: int = 0, filler: int = 0) -> None:
    """``submitter`` for the bare app: plain rows, kept at about BACKLOG pending (``fill``: as there); with
    ``CG_BENCH_BARE_BODIES=1`` each row carries a crossgate-sized body."""
    conn = bare_server.connect(db)
    n = filler * FILL_NUMBERS
    while fill or time.time() < stop_at:
        for _ in range(fill or max(0, BACKLOG - bare_server.pending_count(conn))):
            n += 1
            run = own_run(n) if mode == "own" else None
            body = request_body(n, run or f"run-{n % 17}", f"bare-{n}") if bare_server.BODIES else None
            bare_server.submit(conn, f"bare-{n}", run, body)
            with counter.get_lock():
                counter.value += 1
        if fill:
            break
        time.sleep(0.05)
    conn.close()


def bare_applier(db: str, stop: threading.Event, stats: collections.Counter[str]) -> None:
    conn = bare_server.connect(db)
    while True:
        applied, refused = bare_server.apply_decided(conn)
        stats["applied"] += applied
        stats["apply_refused"] += refused
        if not applied and not refused:
            if stop.is_set():  # the load is over and nothing is left to apply
                break
            time.sleep(0.02)
    conn.close()


def applier(db: str, stop: threading.Event, stats: collections.Counter[str]) -> None:
    """Mark decided requests applied, racing another applier; a second apply must be refused.

    Once ``stop`` is set it goes on until nothing decided is left, so the check that every decided request
    was applied does not depend on how far behind the appliers were when the load ended.
    """
    queue = ReviewQueue(open_store(db))
    while True:
        decided = queue.list_requests(RequestQuery(statuses=(RequestStatus.DECIDED,), limit=100, newest_first=False))
        for request in decided.items:
            try:
                queue.mark_applied(request.id, args=request.approved_args())
                stats["applied"] += 1
            except AlreadyAppliedError:
                stats["apply_refused"] += 1
        if not decided.items:
            if stop.is_set():
                break
            time.sleep(0.02)
    queue.close()


async def reviewer(
    base: str,
    token: str,
    stop_at: float,
    lat: dict[str, list[float]],
    stats: collections.Counter[str],
    run: str | None = None,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    params: dict[str, str | int] = {"status": "pending", "order": "oldest", "limit": 20}
    if run:
        params["run"] = run
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
        while time.time() < stop_at:
            t0 = time.perf_counter()
            page = await http.get("/api/requests", params=params)
            lat["list"].append(time.perf_counter() - t0)
            stats["list_bytes"] += len(page.content)
            stats["list_calls"] += 1
            items = page.json()["items"]
            if not items:
                stats["list_empty"] += 1
                await asyncio.sleep(0.05)
                continue
            target = random.choice(items)
            t0 = time.perf_counter()
            response = await http.post(
                f"/api/requests/{target['id']}/decision", json={"kind": "approve", "fingerprint": target["fingerprint"]}
            )
            lat["decide"].append(time.perf_counter() - t0)
            stats[f"decide_{response.status_code}"] += 1


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


def start(cmd: list[str], env: dict[str, str], base: str) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
        if time.monotonic() > deadline:
            server.terminate()
            raise SystemExit("server did not start")


Load = tuple[int, collections.Counter[str], collections.Counter[str], dict[str, list[float]], float]


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time the processes ``pids`` have used so far (Linux ``/proc``; 0.0 elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def load(
    bases: list[str], tokens: dict[str, str], db: str, feed: Any, apply: Any, mode: str, servers: list[int]
) -> Load:
    """Reviewers for SECONDS against ``bases`` (split between them), with ``feed`` keeping the backlog and
    two ``apply`` threads. ``stats`` counts, besides the answers, the list bytes and the CPU milliseconds the
    ``servers`` (pids) and this process (the reviewers and appliers) used while the reviewers ran."""
    submitted = multiprocessing.get_context("spawn").Value("i", 0)
    fillers = [
        multiprocessing.get_context("spawn").Process(target=feed, args=(db, 0.0, submitted, mode, PREFILL // 2, k))
        for k in (1, 2)
        if PREFILL
    ]
    for filler in fillers:
        filler.start()
    for filler in fillers:
        filler.join()
    stop_at = time.time() + SECONDS
    feeder = multiprocessing.get_context("spawn").Process(target=feed, args=(db, stop_at, submitted, mode))
    feeder.start()
    stop_apply = threading.Event()
    apply_stats: collections.Counter[str] = collections.Counter()
    appliers = [threading.Thread(target=apply, args=(db, stop_apply, apply_stats)) for _ in range(2)]
    for thread in appliers:
        thread.start()
    lat: dict[str, list[float]] = {"list": [], "decide": []}
    stats: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    server_cpu, own_cpu = cpu_seconds(servers), time.process_time()

    async def everyone() -> None:
        await asyncio.gather(
            *(
                reviewer(bases[i % len(bases)], t, stop_at, lat, stats, own_run(i) if mode == "own" else None)
                for i, t in enumerate(tokens.values())
            )
        )

    asyncio.run(everyone())
    elapsed = time.perf_counter() - started
    stats["server_cpu_ms"] = round((cpu_seconds(servers) - server_cpu) * 1000)
    stats["client_cpu_ms"] = round((time.process_time() - own_cpu) * 1000)
    feeder.join()
    stop_apply.set()  # the appliers drain what was decided last, then stop
    for thread in appliers:
        thread.join(timeout=60)
    return submitted.value, stats, apply_stats, lat, elapsed


class Row:
    """One row of the benchmark: a store, a mode, and one or two servers."""

    def __init__(self, name: str, folder: Path) -> None:
        parts = name.split("-")
        if len(parts) not in (2, 3) or parts[0] not in ("sqlite", "postgres") or parts[1] not in ("racing", "own"):
            raise SystemExit(f"unknown row {name!r}: use <sqlite|postgres>-<racing|own>[-x2]")
        self.name, self.store, self.mode = name, parts[0], parts[1]
        self.servers = 2 if parts[2:] == ["x2"] else 1
        self.folder = folder

    def database(self, kind: str) -> str:
        """A fresh database for one side (``crossgate`` or ``bare``) of this row."""
        tag = f"{kind}_{self.name.replace('-', '_')}"
        if self.store == "sqlite":
            return str(self.folder / f"{tag}.db")
        schema = f"bench_{os.getpid()}_{tag}"
        separator = "&" if "?" in POSTGRES_URL else "?"
        chains = f"&partitions={PARTITIONS}" if PARTITIONS and kind == "crossgate" else ""
        return f"{POSTGRES_URL}{separator}schema={schema}{chains}"


def serve(cmds: list[list[str]], env: dict[str, str], ports: list[int]) -> tuple[list[str], list[Any]]:
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    return bases, [start(cmd, env, base) for cmd, base in zip(cmds, bases, strict=True)]


def stop(servers: list[Any]) -> None:
    for server in servers:
        server.terminate()
    for server in servers:
        server.wait(timeout=20)


def run_row(row: Row, tokens: dict[str, str]) -> tuple[int, float]:
    """Run ``row`` (and its bare baseline); (invariant failures, crossgate's decisions per second)."""
    db = row.database("crossgate")
    ReviewQueue(open_store(db)).close()
    env = {**os.environ, "CROSSGATE_TOKENS": ",".join(f"{n}:{t}" for n, t in tokens.items())}
    # The servers' host is not the benchmark's: a first run pins its key in a config directory of its own.
    env.update(XDG_CONFIG_HOME=str(row.folder / "server-config"), XDG_DATA_HOME=str(row.folder / "server-data"))
    ports = [free_port() for _ in range(row.servers)]
    cmds = [
        [sys.executable, "-m", "crossgate.cli", "--db", db, "serve", "--port", str(p), "--log-level", "warning"]
        for p in ports
    ]
    bases, servers = serve(cmds, env, ports)
    try:
        pids = [server.pid for server in servers]
        submitted, stats, apply_stats, lat, elapsed = load(bases, tokens, db, submitter, applier, row.mode, pids)
    finally:
        stop(servers)
    failed = report(db, submitted, stats, apply_stats, lat, elapsed, row)
    if row.servers == 1 and os.environ.get("CG_BENCH_BARE", "1") != "0":
        bare_db = row.database("bare")
        bare_server.setup(bare_db)
        port = free_port()
        bare_cmd = [sys.executable, "-m", "tests.benchmarks.bare_server", bare_db, str(port), ",".join(tokens.values())]
        bases, servers = serve([bare_cmd], dict(os.environ), [port])
        try:
            _, bare_stats, bare_apply, bare_lat, bare_elapsed = load(
                bases, tokens, bare_db, bare_submitter, bare_applier, row.mode, [server.pid for server in servers]
            )
        finally:
            stop(servers)
        compare(stats, lat, elapsed, bare_stats, bare_apply, bare_lat, bare_elapsed, row)
        drop(bare_db)
    drop(db)
    return failed, stats["decide_200"] / elapsed if elapsed else 0.0


def drop(db: str) -> None:
    """Drop a row's PostgreSQL schema (a SQLite file stays in the temporary folder)."""
    if not db.startswith("postgresql"):
        return
    import psycopg

    from crossgate.stores.postgres import split_url

    conninfo, schema = split_url(db)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="crossgate-bench-server-"))
    tokens = {f"r{i:02d}": f"reviewer-token-{i:04d}" for i in range(CLIENTS)}
    failed = 0
    rates: dict[str, float] = {}
    for name in ROWS:
        row = Row(name, folder)
        if row.store == "postgres" and not POSTGRES_URL:
            print(f"{name}: skipped (no PostgreSQL: set CG_BENCH_POSTGRES_URL)")
            continue
        row_failed, rates[name] = run_row(row, tokens)
        failed += row_failed
    for name, rate in rates.items():
        if name.endswith("-x2"):
            one = rates.get(name.removesuffix("-x2"), 0.0)
            print(f"two servers vs one ({name.removesuffix('-x2')}): decisions/s {ratio(rate, one)}")
    return failed


def compare(
    stats: collections.Counter[str],
    lat: dict[str, list[float]],
    elapsed: float,
    bare_stats: collections.Counter[str],
    bare_apply: collections.Counter[str],
    bare_lat: dict[str, list[float]],
    bare_elapsed: float,
    row: Row,
) -> None:
    """Print the bare baseline's figures and crossgate's ratios to them ("n/a" where a side has none)."""
    ours = stats["decide_200"] / elapsed if elapsed else 0.0
    bare = bare_stats["decide_200"] / bare_elapsed if bare_elapsed else 0.0
    store = "SQLite" if row.store == "sqlite" else "PostgreSQL"
    print(
        f"bare FastAPI + uvicorn baseline (durable compare-and-set UPDATE), same load, {bare_elapsed:.1f} s,"
        f" {store}, {row.mode}"
    )
    print(f"  decisions accepted   {bare_stats['decide_200']}  ({bare:.1f}/s); 409s {bare_stats['decide_409']}")
    print(f"  empty pages listed   {bare_stats['list_empty']}")
    print(f"  applied {bare_apply['applied']}; second applies refused {bare_apply['apply_refused']}")
    for name in ("decide", "list"):
        print(f"  {name:<7} latency     p50 {pct(bare_lat[name], 50):.1f} ms   p99 {pct(bare_lat[name], 99):.1f} ms")
    print(f"  {cost_line(bare_stats)}")
    p50 = ratio(pct(lat["decide"], 50), pct(bare_lat["decide"], 50))
    p99 = ratio(pct(lat["decide"], 99), pct(bare_lat["decide"], 99))
    print(
        f"server vs bare ({store}, {'racing' if row.mode == 'racing' else 'own requests'}):"
        f" decisions/s {ratio(ours, bare)}, decide p50 {p50}, p99 {p99}"
    )


def report(
    db: str,
    submitted: int,
    stats: collections.Counter[str],
    apply_stats: collections.Counter[str],
    lat: dict[str, list[float]],
    elapsed: float,
    row: Row,
) -> int:
    queue = ReviewQueue(open_store(db))
    events = queue.events()
    decided_per_request = collections.Counter(e.request_id for e in events if e.kind == "decided")
    applied_per_request = collections.Counter(e.request_id for e in events if e.kind == "applied")
    stored = sum(1 for e in events if e.kind == "submitted")
    closed = [r for r in _all_requests(queue) if r.status in DECIDED_STATUSES]
    ok = stats["decide_200"]
    checks = {
        "no request lost (submitted == stored)": submitted == stored,
        "no decision doubled (each request decided at most once)": max(decided_per_request.values(), default=0) <= 1,
        "every 200 is one decided event": ok == sum(decided_per_request.values()) == len(closed),
        "no decision applied twice": max(applied_per_request.values(), default=0) <= 1,
        "every decided request applied": all(r.is_applied for r in closed),
        "only 200 and 409 answers": {k for k in stats if k.startswith("decide_")} <= {"decide_200", "decide_409"},
        "audit chain verifies": queue.verify_audit().ok,
    }
    queue.close()
    store = "SQLite" if row.store == "sqlite" else "PostgreSQL"
    print(
        f"crossgate server load ({row.name}): {CLIENTS} reviewers, {row.servers} server(s), 1 submitter process,"
        f" 2 appliers, {elapsed:.1f} s, {store}, {row.mode}"
    )
    print(f"  decisions accepted   {ok}  ({ok / elapsed if elapsed else 0.0:.1f}/s)")
    print(f"  decisions refused    {stats['decide_409']} (409: another reviewer was first)")
    applied, refused = apply_stats["applied"], apply_stats["apply_refused"]
    print(f"  requests submitted   {submitted}; applied {applied}; second applies refused {refused}")
    print(f"  empty pages listed   {stats['list_empty']} (a reviewer found nothing to decide and waited 50 ms)")
    for name in ("decide", "list"):
        values = lat[name]
        print(
            f"  {name:<7} latency     p50 {pct(values, 50):.1f} ms   p99 {pct(values, 99):.1f} ms"
            f"   mean {statistics.fmean(values) * 1000 if values else float('nan'):.1f} ms   n={len(values)}"
        )
    print(f"  {cost_line(stats)}")
    for label, passed in checks.items():
        print(f"  [{'ok' if passed else 'FAIL'}] {label}")
    return 0 if all(checks.values()) else 1


def cost_line(stats: collections.Counter[str]) -> str:
    """CPU per accepted decision (server, and this process's reviewers) and the mean size of a list page."""
    decided, pages = stats["decide_200"] or 1, stats["list_calls"] or 1
    return (
        f"per decision: server CPU {stats['server_cpu_ms'] / decided:.2f} ms, reviewers' CPU"
        f" {stats['client_cpu_ms'] / decided:.2f} ms; a list page {stats['list_bytes'] / pages / 1024:.1f} KiB"
    )


def _all_requests(queue: ReviewQueue) -> list[Any]:
    found: list[Any] = []
    cursor = None
    while True:
        page = queue.list_requests(RequestQuery(limit=500, cursor=cursor))
        found.extend(page.items)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


if __name__ == "__main__":
    sys.exit(main())

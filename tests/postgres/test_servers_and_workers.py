"""Two ``crossgate serve`` and two ``crossgate worker`` processes on one PostgreSQL schema.

A decision made through one server is seen at once by the other and resumed by exactly one worker;
racing reviewers on different servers: exactly one decision wins; a worker killed mid-resume: its
lease runs out and the other worker finishes the run once, with no tool run twice.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from crossgate import Approve, ParkedRunStatus, RequestStatus, ReviewQueue, ToolCall
from crossgate.stores.postgres import PostgresStore
from tests.postgres.ticket_resumer import FRAMEWORK

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"ann": "ann-token-0001", "bob": "bob-token-0002"}
WORKER_POLL = 2.0
"""Seconds between a worker's checks when nothing wakes it; resumes faster than this come from NOTIFY."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@dataclass
class Cluster:
    servers: list[str]
    workers: list[subprocess.Popen[bytes]]
    tool_log: Path
    hang_file: Path

    def client(self, server: int, reviewer: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {TOKENS[reviewer]}"}
        return httpx.Client(base_url=self.servers[server], headers=headers, timeout=10)

    def tool_runs(self) -> list[str]:
        return self.tool_log.read_text().splitlines()


@pytest.fixture
def cluster(pg_store: PostgresStore, tmp_path: Path) -> Iterator[Cluster]:
    env = {
        **os.environ,
        "CROSSGATE_TOKENS": ",".join(f"{name}:{token}" for name, token in TOKENS.items()),
        "CG_TEST_TOOL_LOG": str(tmp_path / "tool.log"),
        "CG_TEST_HANG_FILE": str(tmp_path / "hang.pid"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # The servers' host is not this test's: a first run pins its key in a config directory of its own.
        "XDG_CONFIG_HOME": str(tmp_path / "server-config"),
        "XDG_DATA_HOME": str(tmp_path / "server-data"),
    }
    (tmp_path / "tool.log").touch()
    cli = [sys.executable, "-m", "crossgate.cli"]
    ports = [_free_port(), _free_port()]
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        for i, port in enumerate(ports):
            log = (tmp_path / f"server{i}.log").open("wb")
            logs.append(log)
            command = [*cli, "serve", "--db", pg_store.url, "--port", str(port), "--log-level", "warning"]
            procs.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
        workers = []
        for i in range(2):
            log = (tmp_path / f"worker{i}.log").open("wb")
            logs.append(log)
            command = [*cli, "worker", "--db", pg_store.url, "--app", "tests.postgres.ticket_resumer:make"]
            command += ["--poll", str(WORKER_POLL)]
            workers.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
        procs += workers
        servers = [f"http://127.0.0.1:{port}" for port in ports]

        def healthy(url: str) -> bool:
            try:
                headers = {"Authorization": f"Bearer {TOKENS['ann']}"}
                return httpx.get(f"{url}/api/health", headers=headers, timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        for url in servers:
            _until(lambda url=url: healthy(url), 60, f"server {url}")
        time.sleep(1.0)  # the workers are up and waiting on the event log
        yield Cluster(servers, workers, tmp_path / "tool.log", tmp_path / "hang.pid")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in logs:
            log.close()


def _park(queue: ReviewQueue, ticket: str, *, hang: bool = False) -> tuple[str, str]:
    call = ToolCall(framework=FRAMEWORK, tool="delete_ticket", args={"id": ticket}, run=f"run-{ticket}")
    request = queue.submit(call).request
    assert request is not None
    parked = queue.park(
        framework=FRAMEWORK, run=call.run or "", request_ids=[request.id], state="{}", metadata={"hang": hang}
    )
    return request.id, parked.id


def test_a_decision_on_one_server_is_seen_by_the_other_and_resumed_by_exactly_one_worker(
    cluster: Cluster, pg_queue: ReviewQueue
) -> None:
    request_id, parked_id = _park(pg_queue, "t1")
    with cluster.client(0, "ann") as a, cluster.client(1, "bob") as b:
        assert b.get(f"/api/requests/{request_id}").json()["status"] == "pending"
        decided_at = time.monotonic()
        assert a.post(f"/api/requests/{request_id}/decision", json={"kind": "approve"}).status_code == 200
        seen = b.get(f"/api/requests/{request_id}").json()
        # a worker may have applied it already: it wakes on the same decision
        assert seen["status"] in ("decided", "applied") and seen["decision"]["reviewer"] == "ann"
    _until(lambda: pg_queue.get_parked(parked_id).status is ParkedRunStatus.RESUMED, 15, "the resume")
    assert time.monotonic() - decided_at < WORKER_POLL, "a worker should wake on the decision, not on its poll"
    owner = pg_queue.get_parked(parked_id).lease_owner
    assert cluster.tool_runs() == [f"{request_id} delete_ticket {{'id': 't1'}} by {owner}"]
    time.sleep(WORKER_POLL + 0.5)  # give the other worker every chance to run it again
    assert len(cluster.tool_runs()) == 1
    assert pg_queue.get(request_id).status is RequestStatus.APPLIED
    assert [e.actor for e in pg_queue.events() if e.kind == "run_claimed" and e.run == "run-t1"] == [owner]


def test_racing_reviewers_on_different_servers_exactly_one_decision_wins(
    cluster: Cluster, pg_queue: ReviewQueue
) -> None:
    request = pg_queue.submit(ToolCall(framework=FRAMEWORK, tool="delete_ticket", args={"id": "t2"})).request
    assert request is not None
    barrier = threading.Barrier(2)
    codes: dict[str, int] = {}

    def decide(server: int, reviewer: str, body: dict[str, str]) -> None:
        with cluster.client(server, reviewer) as client:
            barrier.wait()
            codes[reviewer] = client.post(f"/api/requests/{request.id}/decision", json=body).status_code

    threads = [
        threading.Thread(target=decide, args=(0, "ann", {"kind": "approve"})),
        threading.Thread(target=decide, args=(1, "bob", {"kind": "reject", "message": "keep t2"})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes.values()) == [200, 409], codes
    winner = next(name for name, code in codes.items() if code == 200)
    stored = pg_queue.get(request.id)
    assert stored.decision is not None and stored.decision.reviewer == winner
    assert [e.kind for e in pg_queue.events(request_id=request.id)] == ["submitted", "decided"]


def test_a_worker_killed_mid_resume_is_finished_once_by_the_other(cluster: Cluster, pg_queue: ReviewQueue) -> None:
    request_id, parked_id = _park(pg_queue, "t3", hang=True)
    pg_queue.decide(request_id, Approve(), reviewer="ann")
    _until(cluster.hang_file.exists, 15, "a worker to claim the run")
    _until(lambda: cluster.hang_file.read_text().strip() != "", 5, "the hanging worker's pid")
    doomed = int(cluster.hang_file.read_text())
    assert doomed in [w.pid for w in cluster.workers]
    os.kill(doomed, signal.SIGKILL)
    _until(lambda: pg_queue.get_parked(parked_id).status is ParkedRunStatus.RESUMED, 20, "the takeover")
    parked = pg_queue.get_parked(parked_id)
    assert parked.attempts == 2 and parked.lease_owner != f"worker-{doomed}"
    assert cluster.tool_runs() == [f"{request_id} delete_ticket {{'id': 't3'}} by {parked.lease_owner}"]
    assert [e.kind for e in pg_queue.events(request_id=request_id)].count("applied") == 1

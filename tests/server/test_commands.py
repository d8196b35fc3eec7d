"""``crossgate serve`` and ``crossgate worker`` as a user runs them, and the worker's loop in process."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from crossgate import Approve, ReviewQueue
from crossgate.errors import ConfigurationError
from crossgate.policy import resolve_policy
from crossgate.server.worker import Worker, load_resumers
from crossgate.stores import open_store
from tests.server.demo_loader import EXAMPLES, ROOT
from tests.server.worker_app import SPECS, DemoTickets, SyntheticAgent

CLI = [sys.executable, "-m", "crossgate.cli"]
BLOCK_SERVER = "import sys; sys.modules['uvicorn'] = None; sys.modules['fastapi'] = None; "


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_works_without_the_server_extra_and_serve_says_how_to_get_it() -> None:
    code = BLOCK_SERVER + "from crossgate.cli import main; sys.argv = ['crossgate'] + sys.argv[1:]; main()"
    helped = subprocess.run([sys.executable, "-c", code, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert helped.returncode == 0, helped.stderr
    assert "serve" in helped.stdout
    assert "worker" in helped.stdout
    served = subprocess.run(
        [sys.executable, "-c", code, "--db", "memory:", "serve"], cwd=ROOT, capture_output=True, text=True
    )
    assert served.returncode == 1
    lines = served.stderr.strip().splitlines()
    assert len(lines) == 1, served.stderr
    assert "pip install 'crossgate[server]'" in lines[0]


@pytest.mark.slow
def test_serve_binds_loopback_and_serves_the_queue(tmp_path: Path) -> None:
    port = free_port()
    db = str(tmp_path / "q.db")
    env = {**os.environ, "CROSSGATE_TOKENS": "ops:ops-token-123"}
    args = [
        *CLI,
        "--db",
        db,
        "serve",
        "--port",
        str(port),
        "--policy",
        str(EXAMPLES / "policy.yaml"),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.2)
        queue = ReviewQueue(open_store(db), resolve_policy(EXAMPLES / "policy.yaml"))
        from crossgate import ToolCall

        request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "T-1"})).request
        assert request is not None
        headers = {"Authorization": "Bearer ops-token-123"}
        listed = httpx.get(f"{base}/api/requests", params={"status": "pending"}, headers=headers).json()
        assert [r["id"] for r in listed["items"]] == [request.id]
        assert listed["items"][0]["reason"] == "Deleting a ticket cannot be undone."
        decided = httpx.post(f"{base}/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=headers)
        assert decided.status_code == 200
        assert queue.get(request.id).decision.reviewer == "ops"  # type: ignore[union-attr]
        queue.close()
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    assert f"review server on http://127.0.0.1:{port}" in out


@pytest.mark.slow
def test_serve_without_reviewers_prints_a_sign_in_address(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "CROSSGATE_TOKENS"}
    args = [*CLI, "--db", "memory:", "serve", "--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        address = lines[2].split("review page ", 1)[1].strip()
        assert address.startswith(f"http://127.0.0.1:{port}/login?token=")
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(address, timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert response.status_code == 303
        assert "crossgate_session=" in response.headers["set-cookie"]
        assert httpx.get(address, timeout=5).status_code == 401, "the printed address signs in once"
        token = process.stdout.readline().rsplit(" ", 1)[1].strip()  # printed for the API and the sign-in form
        assert httpx.post(address.split("?")[0], data={"token": token}, timeout=5).status_code == 303
        me = httpx.get(address.split("/login")[0] + "/api/me", headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert me.json()["name"] == "local"
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)


def _parked_world(tmp_path: Path) -> tuple[str, DemoTickets, ReviewQueue, list[str]]:
    db = str(tmp_path / "q.db")
    tickets = DemoTickets(tmp_path / "tickets.db")
    tickets.seed([("T-101", "a"), ("T-202", "b"), ("T-204", "c"), ("T-303", "d"), ("T-404", "e")])
    queue = ReviewQueue(open_store(db), resolve_policy(EXAMPLES / "policy.yaml"))
    parked: list[str] = []
    for spec in SPECS:
        outcome = asyncio.run(SyntheticAgent(queue, tickets, spec).start(f"run-{spec.key}"))
        parked.append(outcome.parked_run)  # type: ignore[union-attr]
    return db, tickets, queue, parked


@pytest.mark.slow
def test_worker_command_resumes_decided_runs_once(tmp_path: Path) -> None:
    db, tickets, queue, parked = _parked_world(tmp_path)
    env = {"DEMO_TICKETS": str(tickets.path)}
    app = ["--app", "tests.server.worker_app:resumers"]
    idle = run_cli("--db", db, "worker", *app, "--once", env=env)
    assert idle.returncode == 0, idle.stderr
    assert idle.stdout == "", "nothing is decided, so nothing resumes"
    first, _second, third = (queue.parked_runs()[i].request_ids[0] for i in range(3))
    queue.decide(first, Approve(), reviewer="ops")
    queue.decide(third, Approve(), reviewer="ops")
    done = run_cli("--db", db, "worker", *app, "--once", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("finished") == 2
    assert tickets.delete_runs() == ["T-101", "T-303"]
    again = run_cli("--db", db, "worker", *app, "--once", env=env)
    assert again.stdout == ""
    assert tickets.delete_runs() == ["T-101", "T-303"], "a parked run is resumed once"
    assert sorted(p.id for p in queue.parked_runs()) == sorted(p for i, p in enumerate(parked) if i not in (0, 2))
    queue.close()


def test_worker_command_refuses_bad_apps(tmp_path: Path) -> None:
    for target, message in (
        ("nocolon", "module:attribute"),
        ("no_such_module_xyz:x", "cannot import"),
        ("tests.server.worker_app:missing", "has no attribute"),
        ("tests.server.worker_app:not_a_resumer", "no framework and async resume"),
    ):
        result = run_cli("--db", "memory:", "worker", "--app", target, "--once")
        assert result.returncode == 1, result
        assert message in result.stderr


async def test_two_workers_racing_resume_each_run_once(tmp_path: Path) -> None:
    db, tickets, queue, _ = await asyncio.to_thread(_parked_world, tmp_path)
    for parked in queue.parked_runs():
        queue.decide(parked.request_ids[0], Approve(), reviewer="ops")
    other = ReviewQueue(open_store(db), queue.policy)
    workers = [Worker(q, [SyntheticAgent(q, tickets, spec) for spec in SPECS]) for q in (queue, other)]
    results = await asyncio.gather(*(w.run(until_idle=True) for w in workers))
    outcomes = sorted(r.outcome for batch in results for r in batch)
    assert outcomes.count("finished") == len(SPECS)
    assert set(outcomes) <= {"finished", "claimed"}
    assert sorted(tickets.delete_runs()) == sorted(spec.ticket for spec in SPECS)
    other.close()
    queue.close()


def test_load_resumers_accepts_lists_and_factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = ReviewQueue(open_store("memory:"))
    monkeypatch.setenv("DEMO_TICKETS", str(tmp_path / "tickets.db"))
    found = load_resumers("tests.server.worker_app:resumers", queue)
    assert sorted(r.framework for r in found) == sorted(spec.framework for spec in SPECS)
    with pytest.raises(ConfigurationError, match="two resumers"):
        Worker(queue, [*found, found[0]])

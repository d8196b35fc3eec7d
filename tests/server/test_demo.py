"""The demo's non-interactive mode: server, an agent per SDK, a scripted reviewer over HTTP, all runs finished."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import ReviewQueue, open_store
from tests.server.demo_loader import EXAMPLES, ROOT, load_demo

pytestmark = pytest.mark.slow


def _typescript_unavailable() -> str | None:
    """Why the demo's TypeScript agent cannot run here (no node, the workspace not installed or built)."""
    load_demo()
    import typescript_agent

    return typescript_agent.unavailable()


def _events(workdir: Path) -> list[tuple[str, str | None, dict[str, object]]]:
    queue = ReviewQueue(open_store(str(workdir / "crossgate.db")))
    try:
        return [(e.kind, e.channel, e.payload) for e in queue.events()]
    finally:
        queue.close()


@pytest.mark.claude_cli
def test_demo_auto_with_every_adapter(tmp_path: Path) -> None:
    env = {**os.environ, "CROSSGATE_DEMO_AUTO": "1"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "demo.py"), "--port", "0", "--workdir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "review page http://127.0.0.1:" in out
    adapters = ("openai", "claude", "langgraph", "pydantic_ai", "agent_framework", "google_adk")
    for label in (f"via crossgate_{name}" for name in adapters):
        assert label in out, f"{label} missing: the demo fell back to a stand-in\n{out}{done.stderr}"
    skipped = _typescript_unavailable()
    if skipped is None:
        assert "agent typescript: ai-sdk via @crossgate/ai-sdk" in out, out
    else:
        assert f"agent typescript: skipped: {skipped}" in out, out
    [report] = [line for line in out.splitlines() if "tickets left:" in line]
    left, ran = report.split("tickets left: ", 1)[1].split("; deletes that ran: ")
    assert left == "T-202, T-303"
    typescript = [] if skipped else ["T-505"]
    assert sorted(ran.split(", ")) == ["T-101", "T-204", "T-404", *typescript, "T-606", "T-707"], "in any order"
    assert "finished google-adk: deleted ticket T-707" in out, "the ADK run ended reading what its tool did"
    events = _events(tmp_path)
    decided = [(channel, payload["kind"]) for kind, channel, payload in events if kind == "decided"]
    approvals = [("api", "approve")] * (4 + len(typescript))
    assert sorted(decided) == [*approvals, ("api", "edit"), ("api", "reject")]
    frameworks = {payload["framework"] for kind, _, payload in events if kind == "submitted"}
    python = {"openai-agents", "claude-agent-sdk", "langgraph", "pydantic-ai", "agent-framework", "google-adk"}
    assert frameworks == python | ({"ai-sdk"} if typescript else set())
    assert sum(1 for kind, *_ in events if kind == "run_resumed") == 6 + len(typescript)


async def test_demo_auto_with_the_typescript_agent_run_with_node(tmp_path: Path) -> None:
    skipped = _typescript_unavailable()
    if skipped is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the demo's TypeScript agent cannot run in CI: {skipped}")
        pytest.skip(f"the demo's TypeScript agent cannot run here: {skipped}")
    demo = load_demo()
    reviewer = demo.scripted_reviewer(demo.ALL_SPECS)
    report = await demo.run_demo(reviewer=reviewer, port=0, workdir=tmp_path, synthetic=True, typescript=True)
    assert report.typescript is None and report.as_expected
    assert report.results["typescript"] == "deleted ticket T-505", "the model read what the TypeScript tool did"
    assert "T-505" in report.deletes_run and "T-505" not in report.tickets_left
    submitted = [(channel, p["framework"]) for kind, channel, p in _events(tmp_path) if kind == "submitted"]
    assert ("agent-api", "ai-sdk") in submitted, "the TypeScript agent reached the queue through the agent API"


async def test_without_node_the_demo_skips_the_typescript_agent_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = load_demo()
    monkeypatch.setattr(demo.typescript_agent, "unavailable", lambda: "node is not installed")
    report = await demo.run_demo(
        reviewer=demo.scripted_reviewer(demo.ALL_SPECS), port=0, workdir=tmp_path, synthetic=True, typescript=True
    )
    assert report.typescript == "node is not installed" and report.as_expected
    assert "  agent typescript: skipped: node is not installed" in capsys.readouterr().out.splitlines()
    assert "typescript" not in report.results


async def test_demo_auto_with_stand_in_agents(tmp_path: Path) -> None:
    demo = load_demo()
    report = await demo.run_demo(reviewer=demo.scripted_reviewer(demo.SPECS), port=0, workdir=tmp_path, synthetic=True)
    assert report.as_expected
    assert report.results == {
        "openai": "deleted ticket T-101",
        "claude": "deleted ticket T-204",
        "langgraph": "Do not delete this ticket: the customer still needs it. Close it instead.",
        "pydantic-ai": "deleted ticket T-404",
        "agent-framework": "deleted ticket T-606",
        "google-adk": "deleted ticket T-707",
    }
    outcomes = [kind for kind, _, _ in _events(tmp_path) if kind in ("ran", "not_run")]
    assert sorted(outcomes) == ["not_run", "ran", "ran", "ran", "ran", "ran"]


async def test_a_failing_reviewer_fails_the_demo_instead_of_hanging_it(tmp_path: Path) -> None:
    demo = load_demo()

    async def broken(_base_url: str, _token: str) -> None:
        raise ValueError("reviewer crashed")

    with pytest.raises(RuntimeError, match="the reviewer failed") as caught:
        await demo.run_demo(reviewer=broken, port=0, workdir=tmp_path, synthetic=True)
    assert isinstance(caught.value.__cause__, ValueError)


def _printed(out: str, label: str) -> str:
    [line] = [line for line in out.splitlines() if line.strip().startswith(label)]
    return line.split(label, 1)[1].strip()


async def test_the_demo_prints_its_database_and_a_terminal_command_that_decides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    demo = load_demo()
    crossgate = Path(sys.executable).with_name("crossgate")
    printed: dict[str, str] = {}

    def on_ready(_base_url: str, _token: str) -> None:
        out = capsys.readouterr().out
        printed["database"] = _printed(out, "database:")
        printed["command"] = _printed(out, "decide from a terminal:")

    async def terminal_reviewer(_base_url: str, _token: str) -> None:
        assignment, *argv = shlex.split(printed["command"])  # NAME=value crossgate ...: the demo's key directory
        name, _, value = assignment.partition("=")
        assert name == "CROSSGATE_AUTHORITY_DIR" and value.endswith("authority")
        assert argv[0] == "crossgate" and argv[-1] == "review"
        argv[0] = str(crossgate)
        db = ["--db", printed["database"]]
        for _ in range(300):  # bounded: the stand-in agents submit within moments
            if len(json.loads((await _run([str(crossgate), *db, "list", "--json"])).stdout)["items"]) == 6:
                break
            await asyncio.sleep(0.1)
        walked = await _run(argv, stdin="a\na\na\na\na\na\n", env={name: value})
        assert walked.returncode == 0, walked.stderr
        assert "6 approved, 0 edited, 0 rejected, 0 skipped" in walked.stdout

    report = await demo.run_demo(
        reviewer=terminal_reviewer, port=0, synthetic=True, on_ready=on_ready, wait_for_reviewer=True
    )
    key_dir = Path(printed["database"]).parent / "authority"
    assert printed["command"] == f"CROSSGATE_AUTHORITY_DIR={shlex.quote(str(key_dir))} " + shlex.join(
        ["crossgate", "--db", printed["database"], "review"]
    )
    assert report.policy_version == 1 and report.audit == ""
    every = ["T-101", "T-202", "T-303", "T-404", "T-606", "T-707"]
    assert sorted(report.deletes_run) == every, "every run went on after the terminal's approvals"
    out = capsys.readouterr().out
    finished = [line for line in out.splitlines() if line.strip().startswith("finished ")]
    assert len(finished) == 6, "each run's result is printed as it finishes"
    assert out.index(finished[-1]) < out.index("All runs finished:")
    assert not Path(printed["database"]).parent.exists(), "the demo's own temporary folder is removed on exit"


async def _run(
    argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    ours = ("CROSSGATE_DB", "CROSSGATE_POLICY", "CROSSGATE_AUTHORITY_DIR")
    env = {**{k: v for k, v in os.environ.items() if k not in ours}, **(env or {})}
    return await asyncio.to_thread(
        subprocess.run, argv, input=stdin, env=env, capture_output=True, text=True, timeout=60
    )


def test_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / "demo.py"), "--port", str(port), "--synthetic", "--workdir", str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr == (
        f"demo: port {port} on 127.0.0.1 is in use; pick another: make demo PORT={port + 1} "
        "(or python examples/demo.py --port 0 for any free port)\n"
    )
    assert "Traceback" not in done.stdout


def test_make_demo_passes_port_through() -> None:
    done = subprocess.run(
        ["make", "-n", "demo", "PORT=8123", "AUTO=1"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "examples/demo.py --auto --port 8123" in done.stdout, done.stdout + done.stderr


def test_ctrl_c_stops_the_demo_quietly_and_removes_its_folder() -> None:
    demo = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "demo.py"), "--port", "0", "--synthetic"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stdout is not None
        lines = [demo.stdout.readline() for _ in range(6)]  # the address, database, command, three agents
        database = Path(_printed("".join(lines), "database:"))
        assert database.exists()
        demo.send_signal(signal.SIGINT)
        _, err = demo.communicate(timeout=60)
    finally:
        demo.kill()
    assert demo.returncode == 0
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert not database.parent.exists()

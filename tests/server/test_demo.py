"""The demo's non-interactive mode: server, three agents, a scripted reviewer over HTTP, all runs finished."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import ReviewQueue, open_store
from tests.server.demo_loader import EXAMPLES, ROOT, load_demo

pytestmark = pytest.mark.slow


def _events(workdir: Path) -> list[tuple[str, str | None, dict[str, object]]]:
    queue = ReviewQueue(open_store(str(workdir / "crossgate.db")))
    try:
        return [(e.kind, e.channel, e.payload) for e in queue.events()]
    finally:
        queue.close()


@pytest.mark.claude_cli
def test_demo_auto_with_the_three_adapters(tmp_path: Path) -> None:
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
    for label in ("via crossgate_openai", "via crossgate_claude", "via crossgate_langgraph"):
        assert label in out, f"{label} missing: the demo fell back to a stand-in\n{out}{done.stderr}"
    assert "tickets left: T-202, T-303; deletes that ran: T-101, T-204" in out
    events = _events(tmp_path)
    decided = [(channel, payload["kind"]) for kind, channel, payload in events if kind == "decided"]
    assert sorted(decided) == [("api", "approve"), ("api", "edit"), ("api", "reject")]
    frameworks = {payload["framework"] for kind, _, payload in events if kind == "submitted"}
    assert frameworks == {"openai-agents", "claude-agent-sdk", "langgraph"}
    assert sum(1 for kind, *_ in events if kind == "run_resumed") == 3


async def test_demo_auto_with_stand_in_agents(tmp_path: Path) -> None:
    demo = load_demo()
    report = await demo.run_demo(reviewer=demo.scripted_reviewer(demo.SPECS), port=0, workdir=tmp_path, synthetic=True)
    assert report.as_expected
    assert report.results == {
        "openai": "deleted ticket T-101",
        "claude": "deleted ticket T-204",
        "langgraph": "Do not delete this ticket: the customer still needs it. Close it instead.",
    }
    executed = [payload["ran"] for kind, _, payload in _events(tmp_path) if kind == "executed"]
    assert sorted(executed) == [False, True, True]


async def test_a_failing_reviewer_fails_the_demo_instead_of_hanging_it(tmp_path: Path) -> None:
    demo = load_demo()

    async def broken(_base_url: str, _token: str) -> None:
        raise ValueError("reviewer crashed")

    with pytest.raises(RuntimeError, match="the reviewer failed") as caught:
        await demo.run_demo(reviewer=broken, port=0, workdir=tmp_path, synthetic=True)
    assert isinstance(caught.value.__cause__, ValueError)

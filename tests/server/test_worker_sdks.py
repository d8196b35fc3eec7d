"""The worker resumes parked runs of all six real adapters once reviewers decided them over HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from crossgate import ReviewQueue
from crossgate.authority import Keyring
from crossgate.model import ParkedRunStatus
from crossgate.policy import resolve_policy
from crossgate.runs import Parked
from crossgate.server.app import create_app
from crossgate.server.worker import Worker
from crossgate.stores import open_store
from tests.server.conftest import auth, make_settings
from tests.server.demo_loader import EXAMPLES, load_demo
from tests.support.keys import operator_keys

pytestmark = [pytest.mark.slow, pytest.mark.claude_cli]


async def test_worker_resumes_the_runs_of_every_adapter(tmp_path: Path) -> None:
    load_demo()
    import demo_agents
    import demo_sdk_agents

    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), resolve_policy(EXAMPLES / "policy.yaml"))
    tickets = demo_agents.DemoTickets(tmp_path / "tickets.db")
    tickets.seed(demo_agents.TICKETS)
    specs = {spec.key: spec for spec in demo_agents.SPECS}
    agents = [
        demo_sdk_agents.openai_agent(queue, tickets, specs["openai"], tmp_path),
        demo_sdk_agents.claude_agent(queue, tickets, specs["claude"], tmp_path),
        demo_sdk_agents.langgraph_agent(queue, tickets, specs["langgraph"], tmp_path),
        demo_sdk_agents.pydantic_ai_agent(queue, tickets, specs["pydantic-ai"], tmp_path),
        demo_sdk_agents.agent_framework_agent(queue, tickets, specs["agent-framework"], tmp_path),
        demo_sdk_agents.google_adk_agent(queue, tickets, specs["google-adk"], tmp_path),
    ]
    try:
        for key, agent in zip(specs, agents, strict=True):
            assert isinstance(await agent.start(f"w-{key}"), Parked)
        frameworks = {p.framework for p in queue.parked_runs()}
        assert frameworks == {
            "openai-agents",
            "claude-agent-sdk",
            "langgraph",
            "pydantic-ai",
            "agent-framework",
            "google-adk",
        }
        worker = Worker(queue, agents, poll_seconds=0.1)
        assert await worker.run_once() == [], "nothing is decided yet, so nothing resumes"
        app = create_app(queue, make_settings())
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=auth("alice")) as http:
                for request in queue.pending():
                    spec = next(s for s in specs.values() if s.framework == request.call.framework)
                    body = load_demo().scripted_decision(spec, request.model_dump(mode="json"))
                    assert (await http.post(f"/api/requests/{request.id}/decision", json=body)).status_code == 200
        results = await worker.run(until_idle=True)
        assert sorted((r.framework, r.outcome) for r in results) == [
            ("agent-framework", "finished"),
            ("claude-agent-sdk", "finished"),
            ("google-adk", "finished"),
            ("langgraph", "finished"),
            ("openai-agents", "finished"),
            ("pydantic-ai", "finished"),
        ]
        assert tickets.ids() == ["T-202", "T-303"]
        assert sorted(tickets.delete_runs()) == ["T-101", "T-204", "T-404", "T-606", "T-707"]
        statuses = {p.status for p in queue.parked_runs(statuses=tuple(ParkedRunStatus))}
        assert statuses == {ParkedRunStatus.RESUMED}
        assert await worker.run_once() == [], "a parked run is resumed once"
    finally:
        for agent in agents:
            if hasattr(agent, "close"):
                agent.close()
        queue.close()


def test_worker_command_resumes_runs_another_process_started(tmp_path: Path) -> None:
    import asyncio
    import os
    import subprocess
    import sys

    from crossgate import Approve, Edit, Reject
    from tests.server.demo_loader import ROOT

    load_demo()
    import demo_agents
    import demo_sdk_agents

    db = str(tmp_path / "q.db")
    # The worker verifies with the operator's key (tests/support/keys.py), so the reviewer here signs with it.
    authority = Keyring.open(operator_keys()).authority()
    queue = ReviewQueue(open_store(db), resolve_policy(EXAMPLES / "policy.yaml"), authority=authority)
    tickets = demo_agents.DemoTickets(tmp_path / "tickets.db")
    tickets.seed(demo_agents.TICKETS)
    specs = {spec.key: spec for spec in demo_agents.SPECS}
    agents = [
        demo_sdk_agents.openai_agent(queue, tickets, specs["openai"], tmp_path),
        demo_sdk_agents.claude_agent(queue, tickets, specs["claude"], tmp_path),
        demo_sdk_agents.langgraph_agent(queue, tickets, specs["langgraph"], tmp_path),
        demo_sdk_agents.pydantic_ai_agent(queue, tickets, specs["pydantic-ai"], tmp_path),
        demo_sdk_agents.agent_framework_agent(queue, tickets, specs["agent-framework"], tmp_path),
        demo_sdk_agents.google_adk_agent(queue, tickets, specs["google-adk"], tmp_path),
    ]

    async def start_all() -> None:
        for key, agent in zip(specs, agents, strict=True):
            assert isinstance(await agent.start(f"p-{key}"), Parked)

    asyncio.run(start_all())
    agents[1].close()  # the starting process is gone; the worker brings its own Messages API
    for request in queue.pending():
        framework = request.call.framework
        if framework in ("openai-agents", "pydantic-ai", "agent-framework", "google-adk"):
            queue.decide(request.id, Approve(), reviewer="ann")
        elif framework == "claude-agent-sdk":
            queue.decide(request.id, Edit(args={**request.call.args, "id": "T-204"}), reviewer="ann")
        else:
            queue.decide(request.id, Reject(message="Keep it."), reviewer="ann")
    env = {**os.environ, "DEMO_WORKDIR": str(tmp_path)}
    args = ["--db", db, "--policy", str(EXAMPLES / "policy.yaml"), "worker"]
    args += ["--app", "tests.server.worker_sdk_app:resumers", "--until-idle", "--poll", "0.2"]
    done = subprocess.run(
        [sys.executable, "-m", "crossgate.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    finished = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("finished"))
    expected = ["agent-framework", "claude-agent-sdk", "google-adk", "langgraph", "openai-agents", "pydantic-ai"]
    assert finished == expected, done.stdout + done.stderr
    assert tickets.ids() == ["T-202", "T-303"], done.stdout + done.stderr
    assert sorted(tickets.delete_runs()) == ["T-101", "T-204", "T-404", "T-606", "T-707"]
    queue.close()

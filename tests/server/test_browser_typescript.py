"""TypeScript agents' requests on the reviewer page, in real headless Chromium: each SDK under its own name.

Each of the four TypeScript SDKs' agents (``adapters/typescript/packages/examples``, run with node, each behind
its crossgate gate) asks to delete a ticket over the agent API and parks; the page lists the four requests,
each with its framework's badge, filters by framework, and names the framework on the request's page and on
the runs view.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from crossgate.server.settings import agent_token
from crossgate.server.views import FRAMEWORK_LABELS
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir, load_demo

AGENT_TOKEN = "ts-page-agent-token-0123456789"
SDKS = {
    "ai-sdk": "ai-sdk",
    "mastra": "mastra",
    "openai-agents": "openai-agents-ts",
    "claude-agent-sdk": "claude-agent-sdk-ts",
}
"""Each package's SDK name (as cli.js takes it) and the framework its gate reports."""


def _typescript() -> object:
    load_demo()
    import typescript_agent

    return typescript_agent


def _skip_without_node() -> None:
    reason = _typescript().unavailable()  # type: ignore[attr-defined]
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the TypeScript agents cannot run in CI: {reason}")
        pytest.skip(f"the TypeScript agents cannot run here: {reason}")


pytestmark = BROWSER_MARKS


def _park_each(base: str, messages_api: str, workdir: Path) -> dict[str, dict[str, object]]:
    """Run every SDK's agent as its own node process until it parks on its delete; their outcomes by SDK."""
    cli = _typescript().CLI  # type: ignore[attr-defined]
    node = shutil.which("node") or "node"
    started: dict[str, subprocess.Popen[str]] = {}
    for n, sdk in enumerate(SDKS, start=1):
        work = workdir / sdk
        work.mkdir()
        (work / "tickets.json").write_text(json.dumps({"tickets": [f"T-{n}00"], "deletes": []}), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSGATE_")}
        env.update(
            CROSSGATE_SERVER=base,
            CROSSGATE_AGENT_TOKEN=AGENT_TOKEN,
            CROSSGATE_TICKETS=str(work / "tickets.json"),
            CROSSGATE_TICKET=f"T-{n}00",
            CROSSGATE_WORK=str(work),
            MESSAGES_API=messages_api,
        )
        command = [node, str(cli), sdk, "start", f"run-{sdk}"]
        started[sdk] = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outcomes = {}
    for sdk, process in started.items():
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, f"{sdk}: {out}{err}"
        outcomes[sdk] = json.loads(out.strip().splitlines()[-1])
    return outcomes


def test_typescript_requests_show_their_framework_names(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from crossgate_claude.testing import MessagesAPI

    _skip_without_node()
    queue = open_queue(tmp_path)
    with (
        MessagesAPI() as api,
        signed_in(queue, agents=(agent_token("ts-agent", AGENT_TOKEN),)) as session,
    ):
        outcomes = _park_each(session.base, api.base_url, tmp_path)
        assert {sdk: o["status"] for sdk, o in outcomes.items()} == dict.fromkeys(SDKS, "parked"), outcomes
        assert {sdk: o["framework"] for sdk, o in outcomes.items()} == SDKS
        page = session.page
        page.goto(session.base)
        expect(page.locator("a.req")).to_have_count(4)
        for framework in SDKS.values():
            row = page.locator(f'a.req[data-framework="{framework}"]')
            expect(row).to_have_count(1)
            expect(row.locator(f".fw.fw-{framework}")).to_have_text(FRAMEWORK_LABELS[framework])
        page.screenshot(path=artifacts_dir() / "pending-typescript.png", full_page=True)

        page.locator('#filters select[name="framework"]').select_option("claude-agent-sdk-ts")
        page.locator("#filters button[type=submit]").click()
        expect(page.locator("a.req")).to_have_count(1)
        expect(page.locator("a.req .fw")).to_have_text("Claude Agent SDK (TS)")
        page.locator("a.req").click()
        expect(page.locator(".fw-claude-agent-sdk-ts").first).to_have_text("Claude Agent SDK (TS)")

        page.goto(f"{session.base}/runs")
        for framework in SDKS.values():
            expect(page.locator(f"#runs .fw-{framework}")).to_have_text(FRAMEWORK_LABELS[framework])
    assert not session.errors, session.errors
    queue.close()

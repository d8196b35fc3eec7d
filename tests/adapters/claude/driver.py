"""The Claude Agent SDK's delete-ticket agent for the shared conformance scenarios, on the real CLI.

Every process of a scenario (this one, and a fresh one resuming) starts its own scripted Messages API
that appends each request body to ``<workdir>/messages.jsonl``, and points the CLI's config folder at
``<workdir>/cli``, so a session deferred here is resumed there and every process's model input is read
back from one file (``$CG_TEST_MESSAGES_API`` points every process at one API instead). Run as a
script (see ``resume_command``) it resumes a parked run and prints the outcome as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage

from crossgate import DecisionKind, Policy, ReviewQueue, open_queue
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL, TicketAgentDriver
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI, all_tool_results, cli_env, recorded, result_text, tool_uses
from tests.adapters.claude.conftest import ticket_server

ROOT = Path(__file__).resolve().parents[3]
RUN_MARK = "RUN "
MESSAGES_API_ENV = "CG_TEST_MESSAGES_API"
"""When set, the base URL of a scripted Messages API another process serves (one that outlives this one)."""


class ClaudeTicketDriver(TicketAgentDriver):
    """The agent of seed 003 on the bundled Claude Code CLI, gated by ``Gate``."""

    framework: ClassVar[str] = "claude-agent-sdk"
    capabilities: ClassVar[frozenset[DecisionKind]] = frozenset(
        {DecisionKind.APPROVE, DecisionKind.EDIT, DecisionKind.REJECT}
    )

    def __init__(
        self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str, *, lease_seconds: float = 600.0
    ) -> None:
        super().__init__(queue, tickets, workdir, db_url)
        self.lease_seconds = lease_seconds
        (workdir / "policy.json").write_text(queue.policy.model_dump_json(), encoding="utf-8")
        self.record_path = workdir / "messages.jsonl"
        self._api: MessagesAPI | None = None

    def gate(self) -> Gate:
        """A gate whose sessions run the real CLI against this process's scripted API."""
        shared = os.environ.get(MESSAGES_API_ENV)
        if shared is None and self._api is None:
            self._api = MessagesAPI(record_path=self.record_path).start()
        base_url = shared or (self._api.base_url if self._api else "")
        work = self.workdir / "work"
        work.mkdir(exist_ok=True)
        options = ClaudeAgentOptions(
            env=cli_env(base_url, self.workdir / "cli"),
            setting_sources=[],
            cwd=str(work),
            tools=[],
            mcp_servers={"tickets": ticket_server(self.tickets)},
        )
        return Gate(self.queue, options=options, resume_timeout=60.0, lease_seconds=self.lease_seconds)

    async def start(
        self, ticket_ids: Sequence[str], *, run: str, requested_by: str | None = None
    ) -> Finished[object] | Parked:
        lines = [f"{RUN_MARK}{run}", *(f"CALL {TOOL} {json.dumps({'id': i})}" for i in ticket_ids)]
        return await self.gate().run("\n".join(lines), wait=0, requested_by=requested_by)

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        return await self.gate().resume(parked_run)

    def resume_command(self, parked_run: str) -> list[str]:
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.claude.driver import main; main()"
        lease = str(self.lease_seconds)
        return [sys.executable, "-c", code, "resume", str(self.workdir), self.db_url, parked_run, lease]

    def tool_results(self, run: str) -> list[str]:
        bodies = [b for b in recorded(self.record_path) if _run_of(b) == run]
        results = all_tool_results(bodies)
        return [
            result_text(results[use["id"]])
            for use in tool_uses(bodies)
            if use["name"].endswith(TOOL) and use["id"] in results
        ]


def _run_of(body: dict[str, Any]) -> str | None:
    first = next((m for m in body.get("messages", []) if m.get("role") == "user"), None)
    content = first.get("content") if first else None
    texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    for text in texts:
        for line in str(text).splitlines():
            if line.startswith(RUN_MARK):
                return line[len(RUN_MARK) :].strip()
    return None


def describe(outcome: Finished[ResultMessage] | Finished[object] | Parked) -> dict[str, Any]:
    """An outcome as JSON for the parent process."""
    if isinstance(outcome, Parked):
        return {"parked": outcome.parked_run, "run": outcome.run, "requests": list(outcome.request_ids)}
    return {"finished": outcome.run}


def main(argv: Sequence[str] | None = None) -> None:
    """``resume WORKDIR DB PARKED [LEASE]`` or ``run WORKDIR DB WAIT PROMPT``: one step of a scenario, here."""
    command, workdir_text, db_url, *rest = list(argv if argv is not None else sys.argv[1:])
    workdir = Path(workdir_text)
    policy = Policy.model_validate_json((workdir / "policy.json").read_text(encoding="utf-8"))
    queue = open_queue(db_url, policy=policy)  # a store's URL, or a review server's (RemoteQueue)
    lease = float(rest[1]) if command == "resume" and len(rest) > 1 else 600.0
    driver = ClaudeTicketDriver(queue, TicketStore(workdir / "tickets.db"), workdir, db_url, lease_seconds=lease)
    try:
        if command == "resume":
            outcome = asyncio.run(driver.resume(rest[0]))
        else:
            wait = None if rest[0] == "none" else float(rest[0])
            outcome = asyncio.run(driver.gate().run(rest[1], wait=wait))
        print(json.dumps(describe(outcome)), flush=True)
    finally:
        queue.close()


if __name__ == "__main__":
    main()

"""The world of the authority scenarios: a reviewer side that signs, an agent that pins, an attacker that writes.

The reviewer side is a ``ReviewQueue`` holding the authority, as the review server does. The agent is one
adapter's delete-ticket driver (``crossgate.testing``) on its own ``ReviewQueue`` over the same database,
with only the authority's public key pinned for its gates, as ``Gate(authority=...)`` pins it. The
attacker is everything the agent process could be: a writer of the database (raw SQL, and crossgate's own
store classes), with the command line and a key of its own; never the private key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crossgate import ApprovalRequest, Approve, Policy, RequestStatus, ReviewQueue, open_store
from crossgate.adapter import verified_queue
from crossgate.authority import Authority
from crossgate.model import Event
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketStore
from crossgate.testing.adapters import ASK_POLICY
from crossgate.testing.driver import TOOL, TicketAgentDriver
from crossgate.testing.postgres import database_url
from tests.adapters.agent_framework.driver import AgentFrameworkTicketDriver
from tests.adapters.claude.driver import ClaudeTicketDriver
from tests.adapters.langgraph.driver import LangChainTicketDriver, LangGraphTicketDriver
from tests.adapters.openai.driver import OpenAITicketDriver
from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver

DRIVERS: dict[str, type[TicketAgentDriver]] = {
    "openai": OpenAITicketDriver,
    "claude": ClaudeTicketDriver,
    "langgraph": LangGraphTicketDriver,
    "langchain": LangChainTicketDriver,
    "pydantic-ai": PydanticAITicketDriver,
    "agent-framework": AgentFrameworkTicketDriver,
}
DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
REFUSAL = "did not verify against the authority key pinned where the tool runs"
"""What the model reads (and the request's closing reason says) when a decision or rule does not verify."""


@dataclass
class World:
    """One scenario: the database, the authority, both queues, the tickets and the agent's driver."""

    url: str
    workdir: Path
    authority: Authority
    server: ReviewQueue
    agent: ReviewQueue
    tickets: TicketStore
    driver: TicketAgentDriver

    async def park(self, ticket: str, run: str) -> tuple[str, str]:
        """Start a run asking to delete ``ticket``; the parked run and its one pending request."""
        outcome = await self.driver.start([ticket], run=run)
        assert isinstance(outcome, Parked), outcome
        [request_id] = outcome.request_ids
        assert self.server.get(request_id).status is RequestStatus.PENDING
        return outcome.parked_run, request_id

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        return await self.driver.resume(parked_run)

    def sql(self, statement: str, params: tuple[Any, ...]) -> None:
        """Run one statement on the database as its writer would (``?`` placeholders, ``body`` for the JSON)."""
        if self.url.startswith("postgresql"):
            import psycopg

            from crossgate.stores.postgres import split_url

            conninfo, schema = split_url(self.url)
            with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}") as conn:
                conn.execute(statement.replace("?", "%s").replace(" body ", " data "), params)  # type: ignore[arg-type]
            return
        with sqlite3.connect(self.url) as conn:
            conn.execute(statement, params)

    def rewrite(self, request: ApprovalRequest) -> None:
        """Overwrite the request's row (status, body and tokens) with a raw UPDATE: no event is written."""
        tokens = " ".join(request.signatures) or None
        self.sql(
            "UPDATE requests SET status = ?, body = ?, signatures = ? WHERE id = ?",
            (request.status.value, request.model_dump_json(exclude={"signatures"}), tokens, request.id),
        )

    def cancelled_event(self, request_id: str) -> Event:
        [event] = [e for e in self.server.events(request_id=request_id) if e.kind == "cancelled"]
        return event

    def assert_refused(self, request_id: str, run: str, reason: str) -> None:
        """Nothing ran, the request is closed with the refusal, the log names why, and the model was told."""
        assert self.tickets.delete_runs() == 0
        assert self.tickets.ids() == ["t1", "t2", "t3"]
        closed = self.server.get(request_id)
        assert closed.status is RequestStatus.CANCELLED
        assert closed.closed_reason is not None and REFUSAL in closed.closed_reason
        event = self.cancelled_event(request_id)
        assert event.payload["refused"] == reason, event.payload
        assert event.payload["problem"]
        told = self.driver.tool_results(run)
        assert told and REFUSAL in told[-1], told


def forged_approval(
    request: ApprovalRequest, *, reviewer: str = "security-lead", signatures: tuple[str, ...] = ()
) -> ApprovalRequest:
    """``request`` as a forger writes it decided: an approval by ``reviewer``, with ``signatures`` (none by default)."""
    now = datetime.now(UTC)
    decision = Approve(fingerprint=request.fingerprint, reviewer=reviewer, channel="api", decided_at=now)
    update = {"status": RequestStatus.DECIDED, "decision": decision, "decided_at": now, "signatures": signatures}
    return request.model_copy(update=update)


@contextmanager
def world_of(
    driver_class: type[TicketAgentDriver],
    kind: str,
    tmp_path: Path,
    policy: Policy = ASK_POLICY,
    *,
    authority: Authority | None = None,
) -> Iterator[World]:
    """A world on a SQLite file or a fresh PostgreSQL schema; both queues closed afterwards.

    ``authority`` is the reviewer side's key (a fresh one by default); the agent pins its public key.
    """
    with database_url(kind, tmp_path) as url:
        authority = authority or Authority.generate()
        server = ReviewQueue(open_store(url), policy, authority=authority)
        agent = ReviewQueue(open_store(url), policy)
        # What Gate(authority=...) does with the pin: every gate on this queue object verifies with it.
        assert verified_queue(agent, authority.public_key.pin).verified
        tickets = TicketStore(tmp_path / "tickets.db")
        tickets.seed()
        driver = driver_class(agent, tickets, tmp_path, url)
        try:
            yield World(url, tmp_path, authority, server, agent, tickets, driver)
        finally:
            agent.close()
            server.close()


__all__ = ["DATABASES", "DRIVERS", "REFUSAL", "TOOL", "World", "forged_approval", "world_of"]

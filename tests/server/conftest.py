"""Fixtures for the review server: a queue with a shared policy, reviewers, the app and an in-process client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from crossgate import ApprovalRequest, MemoryStore, Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.settings import reviewer

TOKENS = {
    "alice": "alice-token-0001",
    "bob": "bob-token-00002",
    "lena": "lena-token-0003",
}
"""alice may decide everything; bob only langgraph; lena only tools read_* and delete_ticket of agent support."""

TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "minLength": 1}, "reason": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}

POLICY = Policy(
    rules=(
        PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),
        PolicyRule(name="no-drop", verdict=VerdictKind.DENY, tool="drop_*", reason="Dropping tables is never allowed."),
        PolicyRule(
            name="deletes",
            verdict=VerdictKind.ASK,
            tool="delete_*",
            reason="Deleting a ticket cannot be undone.",
            description="Check the ticket id against the customer's request.",
        ),
    )
)


def make_settings(**overrides: Any) -> ServerSettings:
    reviewers = (
        reviewer("alice", TOKENS["alice"]),
        reviewer("bob", TOKENS["bob"], frameworks=["langgraph"]),
        reviewer("lena", TOKENS["lena"], tools=["read_*", "delete_ticket"], agents=["support"]),
    )
    fields: dict[str, Any] = {"reviewers": reviewers, "secret": b"s" * 32, "sweep_seconds": 0.2}
    fields.update(overrides)
    return ServerSettings(**fields)


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def submit(
    queue: ReviewQueue,
    *,
    framework: str = "openai-agents",
    tool: str = "delete_ticket",
    args: dict[str, Any] | None = None,
    agent: str | None = "support",
    run: str | None = "run-1",
    requested_by: str | None = None,
    schema: dict[str, Any] | None = TICKET_SCHEMA,
    **kwargs: Any,
) -> ApprovalRequest:
    call = ToolCall(framework=framework, tool=tool, args=args or {"id": "t1"}, run=run, agent=agent, call_id="c1")
    submission = queue.submit(call, args_schema=schema, requested_by=requested_by, **kwargs)
    assert submission.request is not None, submission.verdict
    return submission.request


@pytest.fixture
def queue() -> ReviewQueue:
    q = ReviewQueue(MemoryStore(), POLICY)
    yield q
    q.close()


@pytest.fixture
def settings() -> ServerSettings:
    return make_settings()


@pytest.fixture
async def client(queue: ReviewQueue, settings: ServerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield http

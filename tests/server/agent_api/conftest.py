"""Fixtures for the agent API: two agent services, a provisioner, reviewers, the app in process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.app import create_app
from crossgate.server.settings import ServerSettings, agent_token
from tests.server.conftest import POLICY, TOKENS, make_settings

AGENT = "/api/agent/v1"
BILLING = "billing-bot-token-0001"
SUPPORT = "support-bot-token-0002"
PROVISIONER = "provisioner-token-0003"


def agent_settings(**overrides: Any) -> ServerSettings:
    agents = (
        agent_token("billing-bot", BILLING),
        agent_token("support-bot", SUPPORT),
        agent_token("ops", PROVISIONER, scope="provisioner"),
    )
    return make_settings(agents=agents, **overrides)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def keyed(token: str, key: str) -> dict[str, str]:
    return {**bearer(token), "Idempotency-Key": key}


def reviewer(name: str = "alice") -> dict[str, str]:
    return bearer(TOKENS[name])


def call(tool: str = "delete_ticket", run: str = "run-1", call_id: str = "c1", **args: Any) -> dict[str, Any]:
    return {"framework": "openai-agents", "tool": tool, "args": args or {"id": "t1"}, "run": run, "call_id": call_id}


@pytest.fixture
def queue() -> Iterator[ReviewQueue]:
    q = ReviewQueue(MemoryStore(), POLICY)
    yield q
    q.close()


@pytest.fixture
async def http(queue: ReviewQueue) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, agent_settings())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def ask(http: httpx.AsyncClient, token: str = BILLING, key: str = "k-1", **body: Any) -> httpx.Response:
    """``POST /requests`` of a delete (the policy asks about deletes)."""
    payload = {"call": call(), **body}
    return await http.post(f"{AGENT}/requests", json=payload, headers=keyed(token, key))

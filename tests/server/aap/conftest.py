"""Fixtures for the AAP provider: a queue whose policy asks for deletes, a provisioner, an app in process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.app import create_app
from crossgate.server.settings import ServerSettings, agent_token
from tests.server.conftest import POLICY, TOKENS, make_settings

PROVISIONER = "provisioner-token-0001"
SERVICE = "billing-bot-token-0001"
AAP = "/aap/v1"


def aap_settings(**overrides: Any) -> ServerSettings:
    agents = (agent_token("ops", PROVISIONER, scope="provisioner"), agent_token("billing-bot", SERVICE))
    return make_settings(agents=agents, **overrides)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def reviewer(name: str = "alice") -> dict[str, str]:
    return bearer(TOKENS[name])


def call(tool: str = "delete_ticket", **args: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": args or {"id": "t1"}, "timeout": "10m"}


@pytest.fixture
def queue() -> ReviewQueue:
    q = ReviewQueue(MemoryStore(), POLICY)
    yield q
    q.close()


@pytest.fixture
async def http(queue: ReviewQueue) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, aap_settings())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def provision(http: httpx.AsyncClient, name: str = "laptop", key: str = "k-1") -> tuple[str, str]:
    """A new instance's id and token."""
    r = await http.post(
        f"{AAP}/instances", json={"instance_name": name}, headers={**bearer(PROVISIONER), "Idempotency-Key": key}
    )
    assert r.status_code == 201, r.text
    return r.json()["instance"]["id"], r.json()["credential"]["token"]


async def create(http: httpx.AsyncClient, token: str, body: dict[str, Any], key: str = "c-1") -> httpx.Response:
    return await http.post(f"{AAP}/requests", json=body, headers={**bearer(token), "Idempotency-Key": key})

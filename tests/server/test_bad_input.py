"""Hostile input over HTTP: a 4xx with the documented ``{error, message, status}`` body, never a 5xx, and
nothing stored. Each test runs on SQLite, whose driver refuses what MemoryStore would quietly take."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from crossgate import ReviewQueue, open_store
from crossgate.limits import MAX_INT64
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.stream import _seq
from crossgate.stores.base import encode_cursor
from tests.server.conftest import POLICY, auth, make_settings, submit

TOO_BIG = str(MAX_INT64 + 1)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[ReviewQueue]:
    q = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
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
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=auth("alice")) as http:
            yield http


def stored(queue: ReviewQueue) -> tuple[Any, ...]:
    """Everything a refusal must leave as it was: requests, events, rules."""
    requests = [r.model_dump() for r in queue.list_requests().items]
    return requests, queue.events(limit=10_000), queue.rules(include_revoked=True)


def refusal(response: httpx.Response, status: int, *words: str) -> str:
    """Assert the documented error body with ``status``; return its message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "status"}, body
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    for word in words:
        assert word in body["message"], body
    return str(body["message"])


@pytest.mark.parametrize(
    "url",
    [
        f"/api/events?after={TOO_BIG}",
        f"/api/events?after={'9' * 5000}",
        "/api/events?after=-1",
        f"/api/events?limit={TOO_BIG}",
        f"/api/stream?after={TOO_BIG}",
        f"/api/requests?limit={TOO_BIG}",
        f"/api/requests?cursor={encode_cursor(MAX_INT64 + 1)}",
        f"/api/requests?cursor={encode_cursor(-1)}",
    ],
)
async def test_integers_beyond_64_bits_are_422(client: httpx.AsyncClient, queue: ReviewQueue, url: str) -> None:
    submit(queue)
    before = stored(queue)
    refusal(await client.get(url), 422)
    assert stored(queue) == before


async def test_the_largest_64_bit_seq_is_answered(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    submit(queue)
    response = await client.get(f"/api/events?after={MAX_INT64}")
    assert response.status_code == 200 and response.json() == []


@pytest.mark.parametrize("header", [TOO_BIG, "9" * 5000, "١٢", "-1", "12a"])
def test_a_last_event_id_that_is_no_seq_is_ignored(header: str) -> None:
    assert _seq(header) is None


def test_a_last_event_id_within_64_bits_is_a_seq() -> None:
    assert _seq(str(MAX_INT64)) == MAX_INT64
    assert _seq("12") == 12

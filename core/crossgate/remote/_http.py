"""One exchange with the agent API, retried through network failures with the same idempotency key.

A failure to connect, a connection dropped mid-answer, a timeout, or a 502/503/504 is retried with
backoff until ``retry_seconds`` have passed since the first attempt; every attempt carries the same
``Idempotency-Key``, so a creation the server did carry out is answered again rather than done twice.
Past the deadline the exchange raises :class:`ServerUnavailableError` and the adapter runs nothing.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from crossgate import tracing
from crossgate.remote._errors import ServerUnavailableError, error_for

RETRIED_STATUSES = frozenset({502, 503, 504})
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 2.0
Params = Mapping[str, str | list[str]]


@dataclass(frozen=True, slots=True)
class Exchange:
    """What to send: method, path under the API, JSON body, query and whether to send an idempotency key."""

    method: str
    path: str
    body: Any = None
    params: Params | None = None
    keyed: bool = False
    headers: Mapping[str, str] | None = None
    timeout: float | None = None
    """A read timeout of its own (a long poll holds the answer for up to its wait)."""

    def request(self, client: httpx.Client | httpx.AsyncClient, key: str | None) -> httpx.Request:
        headers = {**(self.headers or {}), **({"Idempotency-Key": key} if key else {})}
        tracing.inject(headers)  # the server's spans join the agent's trace (W3C traceparent)
        extensions = {} if self.timeout is None else {"timeout": httpx.Timeout(self.timeout, connect=5.0).as_dict()}
        return client.build_request(
            self.method,
            self.path,
            json=self.body,
            params=self.params,
            headers=headers,
            extensions=extensions,
        )


def _answer(response: httpx.Response) -> Any:
    if response.status_code == 204 or response.status_code == 304:
        return None
    if response.is_success:
        return response.json()
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    raise error_for(response.status_code, body)


class Attempts:
    """The retry schedule of one exchange: its idempotency key, its deadline, the next backoff."""

    def __init__(self, exchange: Exchange, retry_seconds: float) -> None:
        self.exchange = exchange
        self.key = uuid.uuid4().hex if exchange.keyed else None
        self.retry_seconds = retry_seconds
        self.deadline = time.monotonic() + retry_seconds
        self.backoff = FIRST_BACKOFF

    def failed(self, last: str) -> float:
        """How long to wait before the next attempt; ServerUnavailableError once the deadline would pass."""
        delay = self.backoff
        if time.monotonic() + delay > self.deadline:
            raise ServerUnavailableError(
                f"the review server did not answer {self.exchange.method} {self.exchange.path} within "
                f"{self.retry_seconds:g} s ({last}); nothing was run"
            )
        self.backoff = min(self.backoff * 2, MAX_BACKOFF)
        return delay


def _failure(exc: httpx.TransportError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def send(client: httpx.Client, exchange: Exchange, *, retry_seconds: float) -> Any:
    """Send ``exchange`` until it is answered or ``retry_seconds`` pass; the answer's JSON (None for 204)."""
    attempts = Attempts(exchange, retry_seconds)
    while True:
        try:
            response = client.send(exchange.request(client, attempts.key))
            if response.status_code not in RETRIED_STATUSES:
                return _answer(response)
            last = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            last = _failure(exc)
        time.sleep(attempts.failed(last))


async def send_async(client: httpx.AsyncClient, exchange: Exchange, *, retry_seconds: float) -> Any:
    """:func:`send` on the event loop (for the long poll)."""
    attempts = Attempts(exchange, retry_seconds)
    while True:
        try:
            response = await client.send(exchange.request(client, attempts.key))
            if response.status_code not in RETRIED_STATUSES:
                return _answer(response)
            last = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            last = _failure(exc)
        await asyncio.sleep(attempts.failed(last))

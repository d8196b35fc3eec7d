"""Network failures: a lost answer is retried with the same key and nothing happens twice; no server, nothing runs."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from crossgate import Approve, ReviewQueue, StoreError, ToolCall
from crossgate.adapter import run_checked
from crossgate.remote import RemoteQueue, ServerUnavailableError
from tests.remote.server import AGENT_TOKEN, free_port

Served = tuple[str, ReviewQueue]


class LosingAnswers(httpx.BaseTransport):
    """Delivers every request to the server, but loses the answer to the first ``lose`` of each route."""

    def __init__(self, lose: int = 1, status: int | None = None) -> None:
        self.inner = httpx.HTTPTransport()
        self.lose = lose
        self.status = status
        self.seen: dict[str, list[str | None]] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        route = f"{request.method} {request.url.path}"
        keys = self.seen.setdefault(route, [])
        keys.append(request.headers.get("idempotency-key"))
        response = self.inner.handle_request(request)
        response.read()
        if len(keys) <= self.lose:
            if self.status is not None:  # a proxy in front answering for the server
                return httpx.Response(self.status, text="bad gateway")
            raise httpx.ReadError("connection reset while reading the answer", request=request)
        return response


def _call(ticket: str = "t1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": ticket}, call_id="c1", run="run-1")


@pytest.mark.parametrize("status", [None, 502, 503])
def test_every_creation_whose_answer_was_lost_happens_once(served: Served, status: int | None) -> None:
    url, reviewer = served
    transport = LosingAnswers(lose=1, status=status)
    with RemoteQueue(url, token=AGENT_TOKEN, transport=transport, retry_seconds=10) as queue:
        prepared = queue.prepare(_call(), request_id="req-n")
        assert prepared.request is not None
        parked = queue.park(
            framework="openai-agents", run="run-1", request_ids=["req-n"], state="S", new_requests=[prepared.request]
        )
        reviewer.decide("req-n", Approve(), reviewer="ann")
        claimed = queue.claim_parked(parked, owner="w1")
        tool_calls: list[object] = []

        async def tool(args: dict[str, object]) -> str:
            tool_calls.append(args)
            return "deleted"

        answer = asyncio.run(run_checked(queue, queue.get("req-n"), {"id": "t1"}, tool, actor="agent"))
        queue.finish_parked(claimed, owner="w1")
        submitted = queue.submit(_call("t2"))  # no request id of its own: the server derives one from the key
        cancelled = queue.cancel(submitted.request.id if submitted.request else "", reason="never mind")
    assert answer.ran and tool_calls == [{"id": "t1"}]
    assert cancelled.status.value == "cancelled"
    assert [p.status.value for p in reviewer.parked_runs(statuses=())] == ["resumed"], "one run, parked once"
    kinds = [e.kind for e in reviewer.events(request_id="req-n")]
    assert kinds == ["submitted", "decided", "applied", "ran"], "each step once, though every answer was lost once"
    assert len(reviewer.pending()) == 0 and len(reviewer.list_requests().items) == 2
    run_events = [e.kind for e in reviewer.events() if e.kind.startswith("run_")]
    assert run_events == ["run_parked", "run_claimed", "run_resumed"]
    for route, keys in transport.seen.items():
        if route.startswith("POST"):
            assert None not in keys and keys[0] == keys[1], route  # the lost attempt and its retry: one key


def test_a_server_that_never_answers_fails_closed_and_runs_nothing(served: Served) -> None:
    url, reviewer = served
    with RemoteQueue(url, token=AGENT_TOKEN) as queue:
        request = queue.submit(_call(), request_id="req-d").request
    assert request is not None
    decided = reviewer.decide("req-d", Approve(), reviewer="ann")
    dead = f"http://127.0.0.1:{free_port()}"
    tool_calls: list[object] = []

    async def tool(args: dict[str, object]) -> str:
        tool_calls.append(args)
        return "deleted"

    with RemoteQueue(dead, token=AGENT_TOKEN, retry_seconds=0.5) as queue:
        with pytest.raises(ServerUnavailableError, match="nothing was run"):
            queue.submit(_call())
        with pytest.raises(StoreError):  # what every adapter already treats as "nothing runs"
            asyncio.run(run_checked(queue, decided, {"id": "t1"}, tool, actor="agent"))
        with pytest.raises(ServerUnavailableError):
            asyncio.run(queue.wait("req-d", timeout=5))
    assert tool_calls == [] and reviewer.get("req-d").status.value == "decided"


def test_a_long_poll_rides_out_a_dropped_connection(served: Served) -> None:
    url, reviewer = served

    class DropFirstPoll(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.polls = 0

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.polls += 1
            if self.polls == 1:
                raise httpx.ConnectError("connection refused", request=request)
            return await self.inner.handle_async_request(request)

    with RemoteQueue(url, token=AGENT_TOKEN, async_transport=DropFirstPoll()) as queue:
        queue.submit(_call(), request_id="req-w")

        async def scenario() -> str:
            waiter = asyncio.create_task(queue.wait("req-w", timeout=30))
            await asyncio.sleep(0.3)
            await asyncio.to_thread(reviewer.decide, "req-w", Approve(), reviewer="ann")
            return (await waiter).status.value

        assert asyncio.run(scenario()) == "decided"

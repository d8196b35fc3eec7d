"""The runs view (parked, resuming, failed, resumed; retry within scope) and what came of a decided call."""

from __future__ import annotations

import re

import httpx
import pytest

from crossgate import Approve, Reject, ReviewQueue
from crossgate.model import ParkedRun, ParkedRunStatus
from tests.server.conftest import TOKENS, submit


@pytest.fixture
async def signed_in(client: httpx.AsyncClient) -> httpx.AsyncClient:
    await client.get("/login", params={"token": TOKENS["alice"]})
    return client


def failed_run(queue: ReviewQueue, framework: str = "langgraph", ticket: str = "t1") -> ParkedRun:
    """A parked run whose resume failed: decided, claimed, finished as failed."""
    request = submit(queue, framework=framework, args={"id": ticket}, run=f"run-{ticket}")
    parked = queue.park(framework=framework, run=f"run-{ticket}", request_ids=[request.id], state='{"sdk": 1}')
    queue.decide(request.id, Approve(), reviewer="lena")
    queue.claim_parked(parked.id, owner="worker-1")
    return queue.finish_parked(parked.id, owner="worker-1", status=ParkedRunStatus.FAILED, outcome="boom: db gone")


def run_rows(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-id="(park_\w+)" class="run-(\w+)">', html))


async def test_runs_lists_waiting_and_failed_and_retries(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    failed = failed_run(queue)
    waiting_request = submit(queue, args={"id": "t2"}, run="run-2")
    waiting = queue.park(framework="openai-agents", run="run-2", request_ids=[waiting_request.id], state="{}x")
    page = (await signed_in.get("/runs")).text
    assert run_rows(page) == {failed.id: "failed", waiting.id: "parked"}
    assert "boom: db gone" in page
    assert page.count('class="primary retry"') == 1
    assert run_rows((await signed_in.get("/runs?view=failed")).text) == {failed.id: "failed"}
    response = await signed_in.post(f"/runs/{failed.id}/retry")
    assert response.status_code == 303 and response.headers["location"] == f"/runs?view=open&retried={failed.id}"
    assert queue.get_parked(failed.id).status is ParkedRunStatus.PARKED
    again = await signed_in.post(f"/runs/{failed.id}/retry")  # only a failed run can be retried
    assert again.status_code == 409 and "only a failed run can be retried" in again.text
    assert any(e.kind == "run_retried" and e.actor == "alice" for e in queue.events())


async def test_retry_needs_scope_over_every_request_of_the_run(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    failed = failed_run(queue, framework="openai-agents")
    await client.get("/login", params={"token": TOKENS["bob"]})  # bob decides langgraph only
    response = await client.post(f"/runs/{failed.id}/retry")
    assert response.status_code == 403 and "out of scope" in response.text
    assert queue.get_parked(failed.id).status is ParkedRunStatus.FAILED
    assert (await client.post("/runs/park_missing/retry")).status_code == 404
    assert (await client.get("/runs")).status_code == 200


async def test_a_decided_call_says_when_it_ran_and_its_result(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    ran = submit(queue, args={"id": "t1"})
    queue.decide(ran.id, Approve(), reviewer="lena")
    assert 'id="ran-line"' not in (await signed_in.get(f"/requests/{ran.id}")).text
    queue.mark_applied(ran.id, args=ran.call.args)
    assert "no outcome recorded yet" in (await signed_in.get(f"/requests/{ran.id}")).text
    queue.record_outcome(ran.id, ran=True, result="deleted ticket t1")
    page = (await signed_in.get(f"/requests/{ran.id}")).text
    assert re.search(
        r'<p class="ran-line ran-true" id="ran-line">Ran at <time [^>]*>[^<]+</time>; '
        r"result: <q>deleted ticket t1</q></p>",
        page,
    )
    refused = submit(queue, args={"id": "t2"})
    queue.decide(refused.id, Reject(message="no"), reviewer="lena")
    queue.mark_applied(refused.id, args=None)
    queue.record_outcome(refused.id, ran=False, error="rejected by lena")
    page = (await signed_in.get(f"/requests/{refused.id}")).text
    assert 'class="ran-line ran-false"' in page and "Did not run" in page and "rejected by lena" in page

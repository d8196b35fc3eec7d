"""The agent API against a writer of the store who deletes the newest signed policy version, then waits
for the server to restart.

A running server refuses the older version by itself (it evaluated the newer one). A restarted one has
only its state head signer's memory (its head file) of the newest version signed: with it, a call the
older version allows, or sends to a person, is denied by ``/evaluate`` and ``/requests`` themselves, with
the refusal recorded, not only by the agent's gate (which holds the served policy for a few seconds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from crossgate import Policy, PolicyRule, RequestStatus, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.policy.versions import apply_policy
from crossgate.server.app import create_app
from crossgate.stores.base import RequestQuery
from crossgate.testing.postgres import database_url
from tests.authority.raw import raw_access
from tests.authority.world import DATABASES
from tests.server.agent_api.conftest import AGENT, BILLING, agent_settings, bearer, call, keyed

pytestmark = pytest.mark.slow


def deletes(verdict: VerdictKind) -> Policy:
    return Policy(rules=(PolicyRule(name="deletes", tool="delete_ticket", verdict=verdict),))


@pytest.fixture(params=DATABASES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(str(request.param), tmp_path) as found:
        yield found


@asynccontextmanager
async def serving(queue: ReviewQueue) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, agent_settings())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


def signed_twice(url: str, older: VerdictKind, newer: VerdictKind) -> Authority:
    """The server's key, with ``older`` signed as version 1 and ``newer`` as version 2."""
    authority = Authority.generate()
    setup = open_store(url)
    apply_policy(setup, authority, deletes(older), created_by="ops")
    apply_policy(setup, authority, deletes(newer), created_by="ops")
    setup.close()
    return authority


async def restarted_after_rollback(url: str, tmp_path: Path, older: VerdictKind, newer: VerdictKind) -> ReviewQueue:
    """A server that ran on version 2 and stopped; the writer deletes version 2 and the stored heads; the
    server starts again on the same head file."""
    authority = signed_twice(url, older, newer)
    head_file = tmp_path / "server-head.json"
    first = ReviewQueue(open_store(url), authority=authority, head_file=head_file)
    try:
        async with serving(first) as http:
            seen = await http.post(f"{AGENT}/evaluate", json={"call": call()}, headers=bearer(BILLING))
            assert seen.json()["kind"] == newer.value, seen.text
    finally:
        first.close()
    raw = raw_access(url)
    raw.execute("DELETE FROM policy_versions WHERE version = 2")
    raw.execute("DELETE FROM state_heads")
    raw.bump_rules_version()
    return ReviewQueue(open_store(url), authority=authority, head_file=head_file)


def refusals(queue: ReviewQueue) -> list[dict[str, Any]]:
    return [dict(e.payload) for e in queue.store.list_events() if e.kind == "refused"]


async def test_a_call_the_older_version_allows_is_denied_by_evaluate_and_requests(url: str, tmp_path: Path) -> None:
    queue = await restarted_after_rollback(url, tmp_path, VerdictKind.ALLOW, VerdictKind.ASK)
    try:
        async with serving(queue) as http:
            evaluated = await http.post(f"{AGENT}/evaluate", json={"call": call()}, headers=bearer(BILLING))
            assert evaluated.status_code == 200, evaluated.text
            verdict = evaluated.json()
            assert verdict["kind"] == "deny" and verdict["rule"] == "crossgate-state-head", verdict
            assert "older than version 2 already signed" in verdict["reason"]
            assert "the store was rolled back" in verdict["reason"]
            submitted = await http.post(f"{AGENT}/requests", json={"call": call()}, headers=keyed(BILLING, "k-1"))
            assert submitted.status_code == 201, submitted.text
            assert submitted.json()["verdict"]["kind"] == "deny" and submitted.json()["request"] is None
            assert queue.policy_version == 1  # the store's version evaluated: only the signer's memory knows
        found = refusals(queue)
        assert [(r["refused"], r["tool"], r["rule"]) for r in found] == [
            ("rolled_back", "delete_ticket", "deletes")
        ] * 2
        actors = [e.actor for e in queue.store.list_events() if e.kind == "refused"]
        assert actors == ["billing-bot", "billing-bot"]
    finally:
        queue.close()


async def test_a_request_the_older_version_asks_for_is_cancelled_not_left_for_a_reviewer(
    url: str, tmp_path: Path
) -> None:
    queue = await restarted_after_rollback(url, tmp_path, VerdictKind.ASK, VerdictKind.DENY)
    try:
        async with serving(queue) as http:
            submitted = await http.post(f"{AGENT}/requests", json={"call": call()}, headers=keyed(BILLING, "k-2"))
            assert submitted.status_code == 201, submitted.text
            body = submitted.json()
            assert body["verdict"]["kind"] == "deny" and body["verdict"]["rule"] == "crossgate-state-head"
            assert body["request"] is None
        (request,) = queue.store.list_requests(RequestQuery()).items
        assert request.status is RequestStatus.CANCELLED  # nobody can approve what version 2 denies
        assert request.closed_reason == body["verdict"]["reason"]
        assert refusals(queue) == []  # the cancellation is the record, with its reason
    finally:
        queue.close()


async def test_without_its_head_file_a_restarted_server_cannot_tell(url: str, tmp_path: Path) -> None:
    """The boundary: no memory of version 2 anywhere the writer cannot reach, so version 1 is evaluated."""
    queue = await restarted_after_rollback(url, tmp_path, VerdictKind.ALLOW, VerdictKind.ASK)
    queue.close()
    (tmp_path / "server-head.json").unlink()
    raw_access(url).execute("DELETE FROM state_heads")  # the restarted server signed version 2 into them again
    authority = queue.authority
    assert authority is not None
    forgetful = ReviewQueue(open_store(url), authority=authority, head_file=tmp_path / "elsewhere.json")
    try:
        async with serving(forgetful) as http:
            allowed = await http.post(f"{AGENT}/evaluate", json={"call": call()}, headers=bearer(BILLING))
            assert allowed.json()["kind"] == "allow", allowed.text
        assert refusals(forgetful) == []
    finally:
        forgetful.close()

"""Fixtures for the authority tests: the authority, an attacker with a key of its own, and a real queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crossgate import MemoryStore, Policy, PolicyRule, ReviewQueue, ToolCall
from crossgate.authority import Authority, TrustedKeys
from crossgate.model import ApprovalRequest
from tests.support.clock import FakeClock


@pytest.fixture
def authority() -> Authority:
    return Authority.generate()


@pytest.fixture
def attacker() -> Authority:
    """A key the gated agent could make for itself."""
    return Authority.generate()


@pytest.fixture
def trusted(authority: Authority) -> TrustedKeys:
    """What the agent pins: the authority's public key, parsed from the line ``crossgate keys init`` prints."""
    return TrustedKeys.parse(authority.public_key.pin)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> Iterator[ReviewQueue]:
    policy = Policy(
        rules=(PolicyRule(name="deletes", tool="delete_*", verdict="ask", apply_within_seconds=600),),
        default_timeout_seconds=3600,
    )
    q = ReviewQueue(MemoryStore(), policy, clock=clock)
    yield q
    q.close()


def submitted(queue: ReviewQueue, ticket: str = "t1", *, tool: str = "delete_ticket") -> ApprovalRequest:
    """A pending request for ``tool`` on ``ticket``, submitted through the real queue."""
    call = ToolCall(framework="openai-agents", tool=tool, args={"id": ticket}, run="run-1", agent="triage")
    request = queue.submit(call).request
    assert request is not None
    return request

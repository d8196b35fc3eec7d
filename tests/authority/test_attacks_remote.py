"""The same verification with the agent on a ``RemoteQueue``: the token travels over HTTP and is checked here.

The server signs (it holds the authority); the agent holds an agent credential and the public key only.
A writer of the server's database still cannot make the agent's tool run, and the agent's refusal is
recorded on the server (``POST /api/agent/v1/refusals``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crossgate import Approve, RequestStatus, ReviewQueue, VerdictKind, open_store
from crossgate.adapter import verified_queue
from crossgate.authority import Authority
from crossgate.errors import RequestCancelledError
from crossgate.model import NewEvent, StandingRule
from crossgate.remote import RemoteQueue
from crossgate.runs import Finished
from crossgate.server.app import create_app
from crossgate.testing import TicketStore
from crossgate.testing.adapters import ASK_POLICY
from tests.authority.world import DRIVERS, REFUSAL, World, forged_approval
from tests.remote.conftest import settings
from tests.remote.server import AGENT_TOKEN
from tests.server.live import live_server

pytestmark = pytest.mark.slow


@pytest.fixture(params=["openai", "langgraph"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    url = str(tmp_path / "crossgate.db")
    authority = Authority.generate()
    server = ReviewQueue(open_store(url), ASK_POLICY, authority=authority)
    with live_server(create_app(server, settings())) as base:
        agent = RemoteQueue(base, token=AGENT_TOKEN, policy_ttl_seconds=0)
        assert verified_queue(agent, authority.public_key).verified  # type: ignore[arg-type]
        tickets = TicketStore(tmp_path / "tickets.db")
        tickets.seed()
        driver = DRIVERS[request.param](agent, tickets, tmp_path, url)  # type: ignore[arg-type]
        try:
            yield World(url, tmp_path, authority, server, agent, tickets, driver)  # type: ignore[arg-type]
        finally:
            agent.close()
    server.close()


async def test_a_signed_approval_travels_to_the_agent_and_runs(world: World) -> None:
    parked, request_id = await world.park("t3", "run-remote")
    world.server.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await world.resume(parked), Finished)
    assert world.tickets.delete_runs("t3") == 1


async def test_an_unsigned_approval_written_into_the_servers_database_runs_nothing(world: World) -> None:
    parked, request_id = await world.park("t3", "run-remote-forged")
    world.rewrite(forged_approval(world.server.get(request_id)))
    assert isinstance(await world.resume(parked), Finished)
    world.assert_refused(request_id, "run-remote-forged", "unsigned")
    assert world.server.get(request_id).status is RequestStatus.CANCELLED


async def test_an_inserted_standing_rule_the_server_evaluates_runs_nothing_at_the_agent(world: World) -> None:
    now = datetime.now(UTC)
    rule = StandingRule(id="rule_everything", effect=VerdictKind.ALLOW, tool="*", created_at=now)
    world.server.store.insert_rule(rule, NewEvent(kind="rule_added", at=now, payload={"rule": rule.id}))
    assert isinstance(await world.driver.start(["t3"], run="run-remote-rule"), Finished)
    assert world.tickets.delete_runs() == 0
    refused = [e for e in world.server.events() if e.kind == "refused"]
    assert refused and {e.payload["refused"] for e in refused} == {"unsigned"}
    assert {e.actor for e in refused} == {"ticket-agent"}  # recorded on the server, as the agent credential
    assert REFUSAL in world.driver.tool_results("run-remote-rule")[-1]


async def test_an_applied_request_set_back_to_decided_in_the_servers_database_runs_nothing(world: World) -> None:
    parked, request_id = await world.park("t3", "run-remote-replay")
    world.server.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await world.resume(parked), Finished)
    applied = world.server.get(request_id)
    world.rewrite(applied.model_copy(update={"status": RequestStatus.DECIDED, "applied_at": None}))
    gate = verified_queue(world.agent)  # type: ignore[arg-type]
    with pytest.raises(RequestCancelledError, match="was applied already"):
        gate.mark_applied(request_id, args={"id": "t3"}, actor="agent")
    assert world.tickets.delete_runs("t3") == 1
    [event] = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
    assert event.payload["refused"] == "consumed" and event.actor == "ticket-agent"


async def test_a_head_past_its_expiry_stops_the_remote_agent(world: World) -> None:
    parked, request_id = await world.park("t3", "run-remote-frozen")
    world.server.decide(request_id, Approve(), reviewer="ann")
    heads = verified_queue(world.agent).heads  # type: ignore[arg-type]
    assert heads is not None
    # Ten minutes on, with the server's store frozen as it is now: every head it holds expired (they last five).
    later = datetime.now(UTC) + timedelta(minutes=10)
    heads.clock = lambda: later
    assert isinstance(await world.resume(parked), Finished)
    assert world.tickets.delete_runs() == 0
    [event] = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
    assert event.payload["refused"] == "stale_head"
    assert "crossgate server must be running" in world.driver.tool_results("run-remote-frozen")[-1]

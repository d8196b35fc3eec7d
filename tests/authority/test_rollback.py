"""No rollback, no freeze: what a writer of the store could still do with genuine signatures, refused by the state head.

The reviewer side (a queue holding the authority, as the server) signs a state head whenever it writes and at
start. The agent's gates pin the public key and remember the newest head in their own file. The attacker
writes the store (raw SQL, crossgate's store classes), and starts fresh agent processes (a new queue on the
same database, built as an agent builds one). Every attack runs nothing, the model reads why, and the
refusal is in the audit log with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crossgate import Approve, Policy, PolicyRule, RequestStatus, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.adapter import verified_queue
from crossgate.adapter._heads import HEAD_DIR_ENV
from crossgate.authority import Authority, StateHeadClaims, TrustedKeys, default_pin_path
from crossgate.authority.consumed import build_filter
from crossgate.errors import RequestCancelledError
from crossgate.policy.versions import apply_policy
from crossgate.runs import Finished, Parked
from crossgate.testing.driver import TOOL, TicketAgentDriver
from tests.authority.raw import raw_access
from tests.authority.world import DATABASES, DRIVERS, World, world_of

ALLOW_DELETES = Policy(rules=(PolicyRule(name="deletes", tool=TOOL, verdict=VerdictKind.ALLOW),))
ASK_DELETES = Policy(rules=(PolicyRule(name="deletes", tool=TOOL, verdict=VerdictKind.ASK),))


@pytest.fixture(params=list(DRIVERS), ids=list(DRIVERS))
def driver_class(request: pytest.FixtureRequest) -> type[TicketAgentDriver]:
    return DRIVERS[request.param]


@pytest.fixture(params=DATABASES)
def database(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(driver_class: type[TicketAgentDriver], database: str, tmp_path: Path) -> Iterator[World]:
    with world_of(driver_class, database, tmp_path) as built:
        yield built


class FreshAgent:
    """A new agent process on the world's database: its own queue (no local policy) and its own gate."""

    def __init__(
        self,
        world: World,
        driver_class: type[TicketAgentDriver],
        *,
        minutes_later: float = 0,
        policy: Policy | None = None,
    ) -> None:
        shift = timedelta(minutes=minutes_later)
        self.queue = ReviewQueue(
            open_store(world.url),
            policy,
            trusted=TrustedKeys.parse(world.authority.public_key.pin),
            clock=lambda: datetime.now(UTC) + shift,
        )
        self.gate = verified_queue(self.queue, world.authority.public_key.pin)
        self.driver = driver_class(self.queue, world.tickets, world.workdir, world.url)

    def close(self) -> None:
        self.queue.close()


def refused_events(world: World, reason: str) -> list[dict[str, object]]:
    return [e.payload for e in world.server.events() if e.kind == "refused" and e.payload.get("refused") == reason]


def assert_call_refused(world: World, agent: FreshAgent, run: str, reason: str, told: str) -> None:
    """The delete never ran, a ``refused`` event names ``reason``, and the model read ``told``."""
    assert world.tickets.delete_runs() == 0
    assert world.tickets.ids() == ["t1", "t2", "t3"]
    assert refused_events(world, reason), [e.payload for e in world.server.events() if e.kind == "refused"]
    results = agent.driver.tool_results(run)
    assert results and told in results[-1], results


# the newest signed policy version deleted, then a fresh agent process ------------------------------------
async def test_the_newest_policy_version_deleted_then_a_fresh_agent_runs_nothing(
    world: World, driver_class: type[TicketAgentDriver]
) -> None:
    apply_policy(world.server.store, world.authority, ALLOW_DELETES, created_by="ops")
    apply_policy(world.server.store, world.authority, ASK_DELETES, created_by="ops")  # signs a head naming v2
    raw = raw_access(world.url)
    raw.execute("DELETE FROM policy_versions WHERE version = 2")
    raw.bump_rules_version()
    agent = FreshAgent(world, driver_class)
    try:
        assert agent.queue.policy_version == 1  # the older signed version: it alone would let the delete run
        outcome = await agent.driver.start(["t3"], run="run-rollback")
        assert isinstance(outcome, Finished)
        assert_call_refused(world, agent, "run-rollback", "rolled_back", "the store was rolled back")
        assert "older than version 2" in str(refused_events(world, "rolled_back")[-1]["problem"])
    finally:
        agent.close()


# an applied request set back to decided -------------------------------------------------------------------
@pytest.mark.parametrize("window", ["never", 600.0])
async def test_an_applied_request_set_back_to_decided_runs_nothing_again(
    driver_class: type[TicketAgentDriver], database: str, tmp_path: Path, window: float | str
) -> None:
    policy = Policy(
        rules=(PolicyRule(name="deletes", tool=TOOL, verdict=VerdictKind.ASK, apply_within_seconds=window),)
    )
    with world_of(driver_class, database, tmp_path, policy) as world:
        parked, request_id = await world.park("t3", "run-replay")
        world.server.decide(request_id, Approve(), reviewer="ann")
        assert isinstance(await world.resume(parked), Finished)
        assert world.tickets.delete_runs("t3") == 1
        applied = world.server.get(request_id)
        assert applied.status is RequestStatus.APPLIED
        # The attacker puts the row back as it was before it was applied: the signed approval is genuine.
        world.rewrite(applied.model_copy(update={"status": RequestStatus.DECIDED, "applied_at": None}))
        for fresh in (False, True):
            gate = verified_queue(world.agent) if not fresh else FreshAgent(world, driver_class).gate
            decided = world.server.get(request_id)
            if decided.status is not RequestStatus.DECIDED:
                world.rewrite(decided.model_copy(update={"status": RequestStatus.DECIDED, "closed_reason": None}))
                decided = world.server.get(request_id)
            with pytest.raises(RequestCancelledError, match="was applied already"):
                gate.mark_applied(decided, args=decided.call.args, actor="agent")
        assert world.tickets.delete_runs("t3") == 1
        closed = world.server.get(request_id)
        assert closed.status is RequestStatus.CANCELLED and "cannot run again" in (closed.closed_reason or "")
        cancelled = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
        assert cancelled and {e.payload["refused"] for e in cancelled} == {"consumed"}


# the store frozen: the head not refreshed past its expiry ----------------------------------------------------
async def test_a_frozen_store_runs_nothing_once_the_head_expires(
    world: World, driver_class: type[TicketAgentDriver]
) -> None:
    parked, request_id = await world.park("t3", "run-frozen")
    world.server.decide(request_id, Approve(), reviewer="ann")  # a genuine approval, and a fresh head
    # Nobody signs again: the store is frozen. The agent comes back ten minutes later (heads last five).
    agent = FreshAgent(world, driver_class, minutes_later=10)
    try:
        assert isinstance(await agent.driver.resume(parked), Finished)
        assert world.tickets.delete_runs() == 0
        closed = world.server.get(request_id)
        assert closed.status is RequestStatus.CANCELLED and "expired at" in (closed.closed_reason or "")
        [event] = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
        assert event.payload["refused"] == "stale_head"
        told = agent.driver.tool_results("run-frozen")
        assert told and "crossgate server must be running" in told[-1], told
    finally:
        agent.close()


@pytest.mark.parametrize("database", DATABASES)
def test_a_frozen_store_refuses_a_call_the_policy_allows(database: str, tmp_path: Path) -> None:
    with world_of(DRIVERS["openai"], database, tmp_path, ALLOW_DELETES) as world:
        agent = FreshAgent(world, DRIVERS["openai"], minutes_later=10, policy=ALLOW_DELETES)
        try:
            call = ToolCall(framework="openai-agents", tool=TOOL, args={"id": "t3"}, run="run-allowed")
            verdict = agent.gate.submit(call).verdict
            assert verdict.kind is VerdictKind.DENY and "crossgate server must be running" in (verdict.reason or "")
            assert refused_events(world, "stale_head")
        finally:
            agent.close()


# the head row deleted, or replaced by one another key signed -------------------------------------------------
@pytest.mark.parametrize("tamper", ["deleted", "other-key"])
async def test_a_missing_or_forged_head_on_a_new_machine_runs_nothing(
    world: World, driver_class: type[TicketAgentDriver], tamper: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parked, request_id = await world.park("t3", "run-head")
    world.server.decide(request_id, Approve(), reviewer="ann")
    raw = raw_access(world.url)
    if tamper == "deleted":
        raw.execute("DELETE FROM state_heads")
    else:
        now = datetime.now(UTC)
        forged = StateHeadClaims(
            issued_at=now,
            expires_at=now + timedelta(days=1),
            rules_version=0,
            audit_seq=0,
            audit_hash="0" * 64,
            consumed=build_filter(()),
            consumed_count=0,
        )
        raw.execute("UPDATE state_heads SET token = ?", Authority.generate().sign(forged))
    monkeypatch.setenv(HEAD_DIR_ENV, str(tmp_path / "new-machine"))  # no head remembered here
    agent = FreshAgent(world, driver_class)
    try:
        assert isinstance(await agent.driver.resume(parked), Finished)
        assert world.tickets.delete_runs() == 0
        [event] = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
        assert event.payload["refused"] == "stale_head"
        assert "no state head signed by the authority" in str(event.payload["problem"])
        told = agent.driver.tool_results("run-head")
        assert told and "crossgate server must be running" in told[-1], told
    finally:
        agent.close()


async def test_a_deleted_head_row_changes_nothing_for_a_gate_that_remembers_one(
    world: World, driver_class: type[TicketAgentDriver]
) -> None:
    parked, request_id = await world.park("t3", "run-remembered")
    world.server.decide(request_id, Approve(), reviewer="ann")
    verified_queue(world.agent).heads.current()  # type: ignore[union-attr]  # the gate has seen the newest head
    raw_access(world.url).execute("DELETE FROM state_heads")
    agent = FreshAgent(world, driver_class)  # a later process on this machine: the head is in its file
    try:
        assert isinstance(await agent.driver.resume(parked), Finished)
        assert world.tickets.delete_runs("t3") == 1
    finally:
        agent.close()


# the quick start: a gate pinned by the default pin file, and the agent deciding for itself ------------------
@pytest.mark.parametrize("database", DATABASES)
async def test_the_quick_start_gate_is_verified_and_the_agents_own_decision_runs_nothing(
    driver_class: type[TicketAgentDriver], database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CROSSGATE_UNVERIFIED", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with world_of(driver_class, database, tmp_path) as world:
        default_pin_path().parent.mkdir(parents=True)
        default_pin_path().write_text(world.authority.public_key.pin + "\n")  # what crossgate serve's setup writes
        agent = ReviewQueue(open_store(world.url), world.agent.policy)
        driver = driver_class(agent, world.tickets, world.workdir, world.url)
        try:
            assert verified_queue(agent).verified  # no pin given: the default pin file's
            outcome = await driver.start(["t3"], run="run-self")
            assert isinstance(outcome, Parked)
            [request_id] = outcome.request_ids
            agent.decide(request_id, Approve(), reviewer="ann")  # the agent approves itself, without the key
            assert isinstance(await driver.resume(outcome.parked_run), Finished)
            assert world.tickets.delete_runs() == 0
            [event] = [e for e in world.server.events(request_id=request_id) if e.kind == "cancelled"]
            assert event.payload["refused"] == "unsigned"
            told = driver.tool_results("run-self")
            assert told and "did not verify against the authority key" in told[-1], told
        finally:
            agent.close()


# the approve path, end to end, with a fresh head ------------------------------------------------------------
async def test_a_genuine_approval_runs_in_a_fresh_agent_process(
    world: World, driver_class: type[TicketAgentDriver]
) -> None:
    parked, request_id = await world.park("t3", "run-genuine")
    world.server.decide(request_id, Approve(), reviewer="ann")
    agent = FreshAgent(world, driver_class)
    try:
        assert isinstance(await agent.driver.resume(parked), Finished)
        assert world.tickets.delete_runs("t3") == 1
        assert not [e for e in world.server.events() if e.kind == "refused"]
    finally:
        agent.close()

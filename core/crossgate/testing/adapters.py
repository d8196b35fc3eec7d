"""``AdapterContract``: the delete-ticket agent driven the same way on every SDK, with the same outcomes.

Subclass it in your adapter's tests and name your ``TicketAgentDriver``::

    class TestMyAdapterContract(AdapterContract):
        driver_class = MyTicketDriver

Each scenario runs on a SQLite file and on a PostgreSQL schema (skipped unless ``CROSSGATE_TEST_POSTGRES_URL``
names a server that answers). Edit and respond scenarios run only when the driver's ``capabilities`` list them.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from crossgate import (
    Approve,
    DecisionKind,
    Edit,
    FingerprintMismatchError,
    ParkedRunClaimedError,
    Policy,
    PolicyRule,
    Reject,
    Remember,
    RememberMatch,
    RequestStatus,
    Respond,
    ReviewQueue,
    SelfDecisionError,
    VerdictKind,
    fingerprint,
    open_store,
)
from crossgate.model import APPROVAL_LAPSED_MESSAGE, EXPIRY_MESSAGE, Event
from crossgate.runs import Finished, Parked
from crossgate.testing.contract import Contract
from crossgate.testing.driver import TOOL, TicketAgentDriver
from crossgate.testing.postgres import database_url
from crossgate.testing.tickets import TicketStore

DriverFactory = Callable[[ReviewQueue, TicketStore, Path, str], TicketAgentDriver]
"""Makes a scenario's driver: ``(queue, tickets, workdir, db_url)``."""

ASK_DELETES = PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool=TOOL, reason="Deleting cannot be undone.")
ASK_POLICY = Policy(rules=(ASK_DELETES,))
REJECTION = "A person rejected this delete: t1 is a real customer ticket. Do not retry it."


class World:
    """One scenario's queue, tickets and driver, all on files under one temporary folder."""

    def __init__(self, make_driver: DriverFactory, workdir: Path, policy: Policy, db_url: str) -> None:
        self.db_url = db_url
        self.queue = ReviewQueue(open_store(self.db_url), policy)
        self.tickets = TicketStore(workdir / "tickets.db")
        self.tickets.seed()
        self.driver = make_driver(self.queue, self.tickets, workdir, self.db_url)

    def only_request(self, outcome: Finished[object] | Parked) -> str:
        assert isinstance(outcome, Parked), f"expected the run to park, got {outcome!r}"
        assert len(outcome.request_ids) == 1
        request = self.queue.get(outcome.request_ids[0])
        assert request.call.tool == TOOL
        assert request.status is RequestStatus.PENDING
        return request.id


MakeWorld = Callable[..., World]
"""The ``make_world`` fixture: ``make_world(policy=ASK_POLICY)`` builds a scenario's world."""


def require(world: World, kind: DecisionKind) -> None:
    if kind not in world.driver.capabilities:
        pytest.skip(f"{world.driver.framework} cannot express {kind.value}")


async def committed_events(world: World, kind: str, count: int, *, seconds: float = 10.0) -> list[Event]:
    """The audit events of ``kind``, once ``count`` of them are committed (or ``seconds`` have passed).

    An allowed call's record is group-committed by the process that judged it (at most 50 ms later, longer
    on a loaded machine), which over HTTP is the server, not the test's queue.
    """
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        found = [e for e in world.queue.events() if e.kind == kind]
        if len(found) >= count or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.02)


def refuse_self_approval(world: World, request_id: str, person: str) -> None:
    """``person`` cannot approve ``request_id``: refused, and the request stays pending and undecided."""
    with pytest.raises(SelfDecisionError):
        world.queue.decide(request_id, Approve(), reviewer=person)
    request = world.queue.get(request_id)
    assert request.status is RequestStatus.PENDING
    assert request.decision is None


class AdapterContract(Contract):
    """The adapter scenarios on the subclass's ``driver_class``.

    Capability flags (class attributes; the defaults claim everything):

    - ``driver_class.capabilities``: the decisions the adapter can express; the edit and respond scenarios
      are skipped, with the reason, for a kind it lacks (approve and reject are required);
    - ``supports_postgres``: the scenarios also run on a PostgreSQL store;
    - ``supports_subprocess_resume``: a parked run resumes in a fresh process (``driver.resume_command``).
    """

    required: ClassVar[tuple[str, ...]] = ("driver_class",)
    driver_class: ClassVar[type[TicketAgentDriver]]
    supports_postgres: ClassVar[bool] = True
    supports_subprocess_resume: ClassVar[bool] = True

    def make_driver(self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str) -> TicketAgentDriver:
        """The scenario's driver; override when your driver needs more than these four."""
        return self.driver_class(queue, tickets, workdir, db_url)

    def require_subprocess_resume(self) -> None:
        if not self.supports_subprocess_resume:
            pytest.skip(f"{self.driver_class.framework} does not resume in another process")

    @pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
    def database(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
        """The store every process of a scenario opens by the same URL: a SQLite file, or a PostgreSQL schema."""
        if request.param == "postgres" and not self.supports_postgres:
            pytest.skip(f"{self.driver_class.framework} does not run on PostgreSQL")
        with database_url(request.param, tmp_path) as url:
            yield url

    @pytest.fixture
    def make_world(self, tmp_path: Path, database: str) -> Iterator[MakeWorld]:
        worlds: list[World] = []

        def make(policy: Policy = ASK_POLICY) -> World:
            world = World(self.make_driver, tmp_path, policy, database)
            worlds.append(world)
            return world

        yield make
        for world in worlds:
            world.queue.close()

    @pytest.mark.asyncio
    async def test_approve_runs_the_tool_once_and_only_after_the_decision(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-approve")
        request_id = world.only_request(outcome)
        assert world.tickets.ids() == ["t1", "t2", "t3"]
        assert world.tickets.delete_runs() == 0
        world.queue.decide(request_id, Approve(), reviewer="ann")
        finished = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(finished, Finished)
        assert world.tickets.ids() == ["t1", "t2"]
        assert world.tickets.delete_runs("t3") == 1
        assert world.driver.tool_results("run-approve") == ["deleted ticket t3"]
        assert world.queue.get(request_id).status is RequestStatus.APPLIED
        outcomes = [e for e in world.queue.events(request_id=request_id) if e.kind in ("ran", "not_run")]
        assert [e.kind for e in outcomes][-1:] == ["ran"] and outcomes[-1].payload["ran"] is True

    @pytest.mark.asyncio
    async def test_seed_scenario_approve_t3_reject_t1(self, make_world: MakeWorld) -> None:
        world = make_world()
        first = await world.driver.start(["t3", "t1"], run="run-seed")
        t3_request = world.only_request(first)
        assert world.queue.get(t3_request).call.args == {"id": "t3"}
        assert world.tickets.ids() == ["t1", "t2", "t3"]
        world.queue.decide(t3_request, Approve(), reviewer="ann")
        second = await world.driver.resume(first.parked_run)  # type: ignore[union-attr]
        t1_request = world.only_request(second)
        assert world.queue.get(t1_request).call.args == {"id": "t1"}
        assert world.tickets.ids() == ["t1", "t2"]
        world.queue.decide(t1_request, Reject(message=REJECTION), reviewer="ann")
        done = await world.driver.resume(second.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.ids() == ["t1", "t2"]
        assert world.tickets.delete_runs("t1") == 0
        results = world.driver.tool_results("run-seed")
        assert results[0] == "deleted ticket t3"
        assert REJECTION in results[1]

    @pytest.mark.asyncio
    async def test_reject_runs_nothing_and_the_model_reads_the_message(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t1"], run="run-reject")
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Reject(message=REJECTION), reviewer="ann")
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs() == 0
        assert world.tickets.ids() == ["t1", "t2", "t3"]
        [told] = world.driver.tool_results("run-reject")
        assert REJECTION in told
        # What a reviewer reads afterwards says it did not run: status rejected, outcome not_run.
        assert world.queue.get(request_id).status is RequestStatus.REJECTED
        kinds = [e.kind for e in world.queue.events(request_id=request_id)]
        assert "not_run" in kinds and "ran" not in kinds, kinds

    @pytest.mark.asyncio
    async def test_edit_runs_the_edited_arguments(self, make_world: MakeWorld) -> None:
        world = make_world()
        require(world, DecisionKind.EDIT)
        outcome = await world.driver.start(["t3"], run="run-edit")
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Edit(args={"id": "t2"}), reviewer="ann")
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.ids() == ["t1", "t3"]
        assert world.tickets.delete_runs("t3") == 0
        assert world.tickets.delete_runs("t2") == 1
        assert "t2" in world.driver.tool_results("run-edit")[0]

    @pytest.mark.asyncio
    async def test_respond_returns_the_reviewers_content_without_running(self, make_world: MakeWorld) -> None:
        world = make_world()
        require(world, DecisionKind.RESPOND)
        outcome = await world.driver.start(["t3"], run="run-respond")
        content = "Ticket t3 was archived by hand instead; nothing else to do."
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Respond(content=content), reviewer="ann")
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.queue.get(request_id).status is RequestStatus.ANSWERED
        assert "ran" not in [e.kind for e in world.queue.events(request_id=request_id)]
        assert world.tickets.delete_runs() == 0
        assert content in world.driver.tool_results("run-respond")[0]

    @pytest.mark.asyncio
    async def test_remembering_the_whole_tool_allows_a_call_in_a_new_run(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-remember-1")
        whole_tool = Remember(match=RememberMatch.TOOL)  # only when the reviewer says so: the default is exact
        world.queue.decide(world.only_request(outcome), Approve(remember=whole_tool), reviewer="ann")
        await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        again = await world.driver.start(["t2"], run="run-remember-2")
        assert isinstance(again, Finished)
        assert world.tickets.ids() == ["t1"]
        allowed = await committed_events(world, "auto_allowed", 1)
        assert [e.payload["args"] for e in allowed] == [{"id": "t2"}]

    @pytest.mark.asyncio
    async def test_remembered_exact_arguments_still_ask_for_others(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-exact-1")
        exact = Remember()  # the default: these exact arguments (issue: approving t3 must not let t2 run unasked)
        assert exact.match is RememberMatch.EXACT
        world.queue.decide(world.only_request(outcome), Approve(remember=exact), reviewer="ann")
        await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        other = await world.driver.start(["t1"], run="run-exact-2")
        world.only_request(other)
        assert world.tickets.ids() == ["t1", "t2"]

    @pytest.mark.asyncio
    async def test_expired_request_runs_nothing_and_says_so(self, make_world: MakeWorld) -> None:
        quick = ASK_DELETES.model_copy(update={"timeout_seconds": 0.2})
        world = make_world(Policy(rules=(quick,)))
        outcome = await world.driver.start(["t3"], run="run-expire")
        request_id = world.only_request(outcome)
        await asyncio.sleep(0.3)
        assert [r.id for r in world.queue.expire_overdue()] == [request_id]
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs() == 0
        assert EXPIRY_MESSAGE in world.driver.tool_results("run-expire")[0]

    @pytest.mark.slow
    @pytest.mark.asyncio
    async def test_resume_in_another_process(self, make_world: MakeWorld) -> None:
        self.require_subprocess_resume()
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-elsewhere")
        world.queue.decide(world.only_request(outcome), Approve(), reviewer="ann")
        command = world.driver.resume_command(outcome.parked_run)  # type: ignore[union-attr]
        completed = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, timeout=240, check=False
        )
        assert completed.returncode == 0, completed.stderr[-2000:]
        assert world.tickets.ids() == ["t1", "t2"]
        assert world.tickets.delete_runs("t3") == 1
        assert world.driver.tool_results("run-elsewhere") == ["deleted ticket t3"]

    @pytest.mark.asyncio
    async def test_a_second_resume_is_refused_and_nothing_runs_twice(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-twice")
        world.queue.decide(world.only_request(outcome), Approve(), reviewer="ann")
        await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        with pytest.raises(ParkedRunClaimedError):
            await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert world.tickets.delete_runs("t3") == 1

    @pytest.mark.asyncio
    async def test_a_decision_for_other_arguments_is_refused_and_nothing_runs(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-mismatch")
        request_id = world.only_request(outcome)
        with pytest.raises(FingerprintMismatchError):
            world.queue.decide(request_id, Approve(fingerprint=fingerprint(TOOL, {"id": "t1"})), reviewer="ann")
        assert world.queue.get(request_id).status is RequestStatus.PENDING
        still = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(still, Parked)
        assert world.tickets.delete_runs() == 0

    @pytest.mark.asyncio
    async def test_a_deny_verdict_never_runs_and_never_asks(self, make_world: MakeWorld) -> None:
        reason = "Policy: t1 is protected. Tell the user it cannot be deleted."
        protect = PolicyRule(
            name="protect-t1",
            verdict=VerdictKind.DENY,
            tool=TOOL,
            where=({"arg": "id", "kind": "equals", "value": "t1"},),
            reason=reason,
        )
        world = make_world(Policy(rules=(protect, ASK_DELETES)))
        outcome = await world.driver.start(["t1"], run="run-deny")
        assert isinstance(outcome, Finished)
        assert world.queue.pending() == []
        assert world.tickets.delete_runs() == 0
        assert reason in world.driver.tool_results("run-deny")[0]
        assert len(await committed_events(world, "auto_denied", 1)) >= 1

    @pytest.mark.asyncio
    async def test_a_deny_added_after_the_approval_wins_on_resume(self, make_world: MakeWorld) -> None:
        world = make_world()
        outcome = await world.driver.start(["t3"], run="run-frozen")
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Approve(), reviewer="ann")
        frozen = "Deletes are frozen until Monday; tell the user to ask again then."
        world.queue.add_rule(world.queue.new_rule(effect="deny", tool=TOOL, message=frozen, created_by="sec"))
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs() == 0
        assert world.tickets.ids() == ["t1", "t2", "t3"]
        [told] = world.driver.tool_results("run-frozen")
        assert told == frozen, "the model reads the policy's reason, in every adapter"
        closed = world.queue.get(request_id)
        assert closed.status is RequestStatus.CANCELLED and closed.closed_reason == frozen
        assert "applied" not in [e.kind for e in world.queue.events(request_id=request_id)]

    @pytest.mark.asyncio
    async def test_an_approval_left_unused_past_its_window_lapses_on_resume(self, make_world: MakeWorld) -> None:
        window = ASK_DELETES.model_copy(update={"apply_within_seconds": 0.2})
        world = make_world(Policy(rules=(window,)))
        outcome = await world.driver.start(["t3"], run="run-lapsed")
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Approve(), reviewer="ann")
        await asyncio.sleep(0.3)
        done = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs() == 0
        [told] = world.driver.tool_results("run-lapsed")
        assert told == APPROVAL_LAPSED_MESSAGE.format(tool=TOOL, seconds=0.2), "the same words in every adapter"
        assert world.queue.get(request_id).status is RequestStatus.EXPIRED

    @pytest.mark.asyncio
    async def test_the_person_a_run_acts_for_cannot_approve_its_calls(self, make_world: MakeWorld) -> None:
        world = make_world()
        first = await world.driver.start(["t3", "t1"], run="run-own", requested_by="pat")
        t3 = world.only_request(first)
        assert world.queue.get(t3).requested_by == "pat"
        refuse_self_approval(world, t3, "pat")
        still = await world.driver.resume(first.parked_run)  # type: ignore[union-attr]
        assert isinstance(still, Parked) and still.parked_run == first.parked_run, (  # type: ignore[union-attr]
            "nothing to resume: still pending"
        )
        assert world.tickets.delete_runs() == 0

        world.queue.decide(t3, Approve(), reviewer="ann")
        second = await world.driver.resume(first.parked_run)  # type: ignore[union-attr]
        t1 = world.only_request(second)
        assert world.queue.get(t1).call.args == {"id": "t1"}
        assert world.queue.get(t1).requested_by == "pat", "a request made after the resume carries the run's person"
        assert world.tickets.delete_runs("t3") == 1
        refuse_self_approval(world, t1, "pat")
        world.queue.decide(t1, Reject(message=REJECTION), reviewer="ann")
        done = await world.driver.resume(second.parked_run)  # type: ignore[union-attr]
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs() == 1
        assert world.tickets.ids() == ["t1", "t2"]
        results = world.driver.tool_results("run-own")
        assert results[0] == "deleted ticket t3"
        assert REJECTION in results[1]

    @pytest.mark.slow
    @pytest.mark.asyncio
    async def test_a_resume_in_another_process_keeps_the_person_the_run_acts_for(self, make_world: MakeWorld) -> None:
        self.require_subprocess_resume()
        world = make_world()
        first = await world.driver.start(["t3", "t1"], run="run-own-elsewhere", requested_by="pat")
        t3 = world.only_request(first)
        world.queue.decide(t3, Approve(), reviewer="ann")
        command = world.driver.resume_command(first.parked_run)  # type: ignore[union-attr]
        completed = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, timeout=240, check=False
        )
        assert completed.returncode == 0, completed.stderr[-2000:]
        [again] = world.queue.parked_runs()  # parked again, by the other process, on t1
        t1 = world.only_request(Parked(again.run, again.id, again.request_ids))
        assert world.queue.get(t1).requested_by == "pat", "the other process read the person from the store"
        assert world.tickets.delete_runs("t3") == 1
        refuse_self_approval(world, t1, "pat")
        assert world.tickets.delete_runs("t1") == 0

    @pytest.mark.asyncio
    async def test_a_call_that_needs_two_approvals_runs_once_after_the_second(self, make_world: MakeWorld) -> None:
        world = make_world(Policy(rules=(ASK_DELETES.model_copy(update={"approvals": 2}),)))
        outcome = await world.driver.start(["t3"], run="run-two")
        request_id = world.only_request(outcome)
        world.queue.decide(request_id, Approve(), reviewer="ann")
        still = await world.driver.resume(outcome.parked_run)  # type: ignore[union-attr]
        assert isinstance(still, Parked), "one approval of two runs nothing"
        assert world.tickets.delete_runs() == 0
        world.queue.decide(request_id, Approve(), reviewer="bob")
        done = await world.driver.resume(still.parked_run)
        assert isinstance(done, Finished)
        assert world.tickets.delete_runs("t3") == 1
        assert world.queue.approvers(request_id) == ["ann", "bob"]

    @pytest.mark.asyncio
    async def test_a_rule_on_who_the_run_acts_for_decides_in_every_adapter(self, make_world: MakeWorld) -> None:
        interns = "Interns' runs may not delete tickets; ask a teammate."
        no_interns = PolicyRule(
            name="no-intern-deletes",
            verdict=VerdictKind.DENY,
            tool=TOOL,
            context=({"arg": "requested_by", "kind": "glob", "pattern": "intern-*"},),
            reason=interns,
        )
        leads = PolicyRule(
            name="leads-delete",
            verdict=VerdictKind.ALLOW,
            tool=TOOL,
            context=({"arg": "requested_by", "kind": "glob", "pattern": "lead-*"},),
        )
        world = make_world(Policy(rules=(no_interns, leads)))
        allowed = await world.driver.start(["t2"], run="run-lead", requested_by="lead-1")
        assert isinstance(allowed, Finished) and world.tickets.delete_runs("t2") == 1, "allowed without asking"
        denied = await world.driver.start(["t3"], run="run-intern", requested_by="intern-7")
        assert isinstance(denied, Finished)
        assert world.tickets.delete_runs("t3") == 0 and world.queue.pending() == []
        assert interns in world.driver.tool_results("run-intern")[0]
        world.queue.policy = Policy(rules=(no_interns, leads, ASK_DELETES))
        asked = await world.driver.start(["t3"], run="run-staff", requested_by="pat")
        request = world.queue.get(world.only_request(asked))
        assert request.call.context["requested_by"] == "pat", "the call carries who its run acts for"

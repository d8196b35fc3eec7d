"""``GateContract``: what every ``Gate`` of the ``GateTicketDriver`` shape keeps beyond the adapter scenarios.

The gate verifies each decision with the authority key it pins, the app's context reaches every call and is
read back from the parked run, and a request carries the tool's schema and description. Through the SDK's
own loop: two calls of one turn park together and each gets its own answer; every decision the adapter
offers reaches the tool and the model as decided; a policy deny and arguments the tool's schema refuses run
nothing and the model reads why. Subclass it with your ``GateTicketDriver``::

    class TestMyAdapterGate(GateContract):
        driver_class = MyTicketDriver
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from crossgate import (
    Approve,
    DecisionKind,
    Edit,
    Policy,
    PolicyRule,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    VerdictKind,
    open_store,
)
from crossgate.authority import Authority
from crossgate.model import Decision, JsonObject
from crossgate.runs import Finished, Parked
from crossgate.testing.driver import TOOL
from crossgate.testing.gate_driver import GateTicketDriver
from crossgate.testing.gate_world import REJECTION, GateWorld, QueueMaker
from crossgate.testing.tickets import TicketStore

DESCRIPTION = "Delete a ticket by id. This cannot be undone."
"""The description (docstring) a driver's ``delete_ticket`` is declared with."""
DECISIONS: dict[str, tuple[Decision, str, list[str]]] = {
    "edit": (Edit(args={"id": "t2"}), "deleted ticket t2", ["t2"]),
    "respond": (Respond(content="t3 was archived by hand"), "t3 was archived by hand", []),
    "reject": (Reject(message=REJECTION), REJECTION, []),
}
"""A reviewer's decision on ``delete_ticket t3``, what the model then reads, and which tickets were deleted."""


class GateContract(GateWorld):
    """The gate scenarios on the subclass's ``driver_class`` (a ``GateTicketDriver``)."""

    driver_class: ClassVar[type[GateTicketDriver[Any]]]

    def make_driver(
        self, queue: ReviewQueue, tickets: TicketStore, workdir: Path, db_url: str
    ) -> GateTicketDriver[Any]:
        return self.driver_class(queue, tickets, workdir, db_url)

    @pytest.mark.asyncio
    async def test_the_gate_verifies_decisions_with_the_pinned_authority_key(
        self, make_queue: QueueMaker, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        """``Gate(authority=...)``: a decision signed by the authority runs; one written without its key does not."""
        authority = Authority.generate()
        reviewer = ReviewQueue(open_store(db_url), make_queue().policy, authority=authority)  # the server's side
        agent_queue = make_queue()  # the agent's side: no key of its own, only the pin
        driver = self.make_driver(agent_queue, tickets, tmp_path, db_url)
        driver.gate = driver.make_gate(agent_queue, authority=authority.public_key.pin)
        try:
            first = await driver.start(["t3", "t1"], run="run-pin")
            assert isinstance(first, Parked)
            reviewer.decide(first.request_ids[0], Approve(), reviewer="ann")
            second = await driver.resume(first.parked_run)
            assert isinstance(second, Parked) and tickets.delete_runs("t3") == 1, "the signed approval ran"
            make_queue().decide(second.request_ids[0], Approve(), reviewer="mallory")  # unsigned, straight to the store
            done = await driver.resume(second.parked_run)
            assert isinstance(done, Finished)
            assert tickets.delete_runs("t1") == 0
            told = driver.tool_results("run-pin")
            assert told[0] == "deleted ticket t3" and "did not verify against the authority key pinned" in told[1]
            assert reviewer.get(second.request_ids[0]).status is RequestStatus.CANCELLED
        finally:
            reviewer.close()

    @pytest.mark.asyncio
    async def test_the_app_context_reaches_every_call_and_is_parked_with_the_run(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        driver.gate = driver.make_gate(queue, context={"tenant": "acme"})
        context: JsonObject = {"ticket_queue": "spam"}
        first = await driver.start(["t3", "t1"], run="run-ctx", call_context=context, requested_by="pat")
        assert isinstance(first, Parked)
        expected = {"tenant": "acme", "ticket_queue": "spam", "requested_by": "pat"}
        assert queue.get(first.request_ids[0]).call.context == expected
        queue.decide(first.request_ids[0], Approve(), reviewer="ann")
        driver.gate = driver.make_gate(queue)  # a resumer that knows no context: it is read from the parked run
        second = await driver.resume(first.parked_run)
        assert isinstance(second, Parked)
        assert queue.get(second.request_ids[0]).call.context == expected
        assert queue.get(second.request_ids[0]).requested_by == "pat"

    @pytest.mark.asyncio
    async def test_the_request_carries_the_tools_schema_and_description(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        parked = await driver.start(["t3"], run="run-schema")
        assert isinstance(parked, Parked)
        request = queue.get(parked.request_ids[0])
        schema = request.args_schema
        assert schema is not None
        properties = schema["properties"]
        assert isinstance(properties, dict) and isinstance(properties["id"], dict)
        assert properties["id"]["type"] == "string"
        assert request.description == DESCRIPTION

    @pytest.mark.asyncio
    async def test_two_calls_in_one_turn_park_together_and_each_gets_its_answer(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        parked = await driver.start_turns([["t3", "t1"]], run="run-pair")
        assert isinstance(parked, Parked)
        t3, t1 = (queue.get(r) for r in parked.request_ids)
        assert (t3.call.args, t1.call.args) == ({"id": "t3"}, {"id": "t1"})
        queue.decide(t3.id, Approve(), reviewer="ann")
        still = await driver.resume(parked.parked_run)
        assert isinstance(still, Parked), "every pending call needs an answer: wait for both"
        assert tickets.delete_runs() == 0, "nothing of the turn runs before both are decided"
        queue.decide(t1.id, Reject(message=REJECTION), reviewer="ann")
        done = await driver.resume(parked.parked_run)
        assert isinstance(done, Finished)
        assert (tickets.ids(), tickets.delete_runs("t3"), tickets.delete_runs("t1")) == (["t1", "t2"], 1, 0)
        assert sorted(driver.tool_results("run-pair")) == sorted(["deleted ticket t3", REJECTION])

    @pytest.mark.asyncio
    @pytest.mark.parametrize("decided", list(DECISIONS))
    async def test_each_decision_reaches_the_tool_and_the_model_as_decided(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str, decided: str
    ) -> None:
        decision, told, deleted = DECISIONS[decided]
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        if DecisionKind(decided) not in driver.capabilities:
            pytest.skip(f"{driver.framework} offers no {decided}")
        parked = await driver.start(["t3"], run="run-decide")
        assert isinstance(parked, Parked) and driver.tool_results("run-decide") == [], "the model is not told yet"
        queue.decide(parked.request_ids[0], decision, reviewer="ann")
        done = await driver.resume(parked.parked_run)
        assert isinstance(done, Finished)
        assert [t for t in ("t1", "t2", "t3") if tickets.delete_runs(t)] == deleted
        assert driver.tool_results("run-decide") == [told]

    @pytest.mark.asyncio
    async def test_a_policy_deny_runs_nothing_and_the_model_reads_the_reason(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        queue.policy = Policy(rules=(PolicyRule(name="no", verdict=VerdictKind.DENY, tool=TOOL, reason="Frozen."),))
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        done = await driver.start(["t3"], run="run-deny")
        assert isinstance(done, Finished)
        assert tickets.delete_runs() == 0 and queue.pending() == []
        assert driver.tool_results("run-deny") == [f"crossgate did not run {TOOL}: Frozen."]

    @pytest.mark.asyncio
    async def test_arguments_the_tools_schema_refuses_are_never_judged_and_never_run(
        self, queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, db_url: str
    ) -> None:
        driver = self.make_driver(queue, tickets, tmp_path, db_url)
        done = await driver.start_turns([[7]], run="run-schema-refused")  # the tool takes a string id
        assert isinstance(done, Finished)
        assert queue.pending() == [] and tickets.delete_runs() == 0
        [told] = driver.tool_results("run-schema-refused")
        assert driver.schema_refusal in told and re.search(r"\bid\b", told), "names the refused field: " + told

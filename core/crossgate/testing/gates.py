"""``GateContract``: what every ``Gate`` of the ``GateTicketDriver`` shape keeps beyond the adapter scenarios.

The gate verifies each decision with the authority key it pins, the app's context reaches every call and is
read back from the parked run, and a request carries the tool's schema and description. Subclass it with
your ``GateTicketDriver``::

    class TestMyAdapterGate(GateContract):
        driver_class = MyTicketDriver
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from crossgate import Approve, RequestStatus, ReviewQueue, open_store
from crossgate.authority import Authority
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate.testing.gate_driver import GateTicketDriver
from crossgate.testing.gate_world import GateWorld, QueueMaker
from crossgate.testing.tickets import TicketStore

DESCRIPTION = "Delete a ticket by id. This cannot be undone."
"""The description (docstring) a driver's ``delete_ticket`` is declared with."""


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

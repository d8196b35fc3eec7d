"""Attacks on a parked run's stored RunState: the agent, which can write the store, rewrites the call it approved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from agents._tool_invocation import tool_invocation_identity_and_scope

from crossgate import Approve, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.runs import Parked
from crossgate_openai import Gate
from tests.adapters.openai.scripted import Call, PlannedModel, counting_tool, ticket_agent, tool_results
from tests.authority.raw import raw_access
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

READ = "read_ticket"
ASK_ALL = Policy(rules=(PolicyRule(name="ask-all", verdict=VerdictKind.ASK),), default=VerdictKind.ALLOW)


def reads_then(tickets: TicketStore, model: PlannedModel, reads: list[dict[str, Any]]) -> Agent[Any]:
    """The seed's agent with a second tool of the very same schema, ``read_ticket(id)``."""
    agent = ticket_agent(tickets, model)
    agent.tools.insert(0, counting_tool(READ, reads, lambda a: f"ticket {a['id']}"))
    return agent


async def park_approved(queue: ReviewQueue, agent: Agent[Any], run: str) -> tuple[str, str]:
    parked = await Gate(queue).run(agent, "go", run=run)
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    queue.decide(request_id, Approve(), reviewer="ann")
    return parked.parked_run, request_id


def rewrite_state(queue: ReviewQueue, db: Path, parked_run: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` everywhere in the stored state, as a writer of the database would.

    The SDK refuses a call whose stored invocation digests no longer match it (ModelBehaviorError), but
    they are unkeyed SHA-256 of the call: the attacker recomputes them with the SDK's own function.
    """
    stored = queue.get_parked(parked_run).state
    assert stored.count(old) >= 2, "the call appears in several places of the RunState"
    state = json.loads(stored.replace(old, new))
    calls = {c["call_id"]: c for c in state["model_responses"][-1]["output"] if c["type"] == "function_call"}
    for call_id, record in state["context"]["tool_invocations"].items():
        _, _, scope, digest = tool_invocation_identity_and_scope(calls[call_id])
        record.update(approval_scope=scope, fingerprint=digest)
    raw_access(str(db)).execute("UPDATE parked_states SET state = ? WHERE id = ?", json.dumps(state), parked_run)


def refusals(queue: ReviewQueue, request_id: str) -> list[str]:
    return [str(e.payload["error"]) for e in queue.events(request_id=request_id) if e.kind == "not_run"]


@pytest.fixture
def ask_all(make_queue: Any) -> ReviewQueue:
    return make_queue(ASK_ALL)


async def test_an_approved_call_renamed_to_another_tool_in_the_state_runs_neither(
    ask_all: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """``read_ticket`` renamed to ``delete_ticket`` (same schema) wherever the call appears: the SDK accepts it."""
    reads: list[dict[str, Any]] = []

    def agent(model: PlannedModel) -> Agent[Any]:
        return reads_then(tickets, model, reads)

    first = PlannedModel([[Call(READ, json.dumps({"id": "t3"}), "c1")]], final="Done.")
    parked_run, request_id = await park_approved(ask_all, agent(first), "run-swap")
    rewrite_state(ask_all, tmp_path / "crossgate.db", parked_run, f'"{READ}"', f'"{TOOL}"')

    model = PlannedModel([], final="Done.")
    await Gate(ask_all, sdk_agent=agent(model)).resume(parked_run)

    assert tickets.delete_runs() == 0, "an approval of read_ticket let delete_ticket run"
    assert reads == []
    told = tool_results(model.inputs)
    assert len(told) == 1 and f"was reviewed for {READ}, not for {TOOL}" in told[0], told
    assert refusals(ask_all, request_id) == told


async def test_an_approved_calls_arguments_rewritten_in_the_state_run_nothing(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """The approved delete of t3 rewritten to delete t1: the fingerprint check refuses it."""
    first = PlannedModel([[Call(TOOL, json.dumps({"id": "t3"}), "c1")]], final="Done.")
    parked_run, request_id = await park_approved(queue, ticket_agent(tickets, first), "run-args")
    rewrite_state(queue, tmp_path / "crossgate.db", parked_run, '\\"t3\\"', '\\"t1\\"')

    model = PlannedModel([], final="Done.")
    await Gate(queue, sdk_agent=ticket_agent(tickets, model)).resume(parked_run)

    assert tickets.delete_runs() == 0
    told = tool_results(model.inputs)
    assert len(told) == 1 and "reviewed for other arguments" in told[0], told
    assert refusals(queue, request_id) == told

"""The Pydantic AI adapter through the SDK's own FunctionModel: what runs, what the model reads, what is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel

from crossgate import (
    Approve,
    ConfigurationError,
    Edit,
    InvalidArgumentsError,
    ParkedRunStatus,
    Policy,
    PolicyRule,
    RequestStatus,
    ReviewQueue,
    VerdictKind,
)
from crossgate.adapter import request_id
from crossgate.runs import Finished, Parked
from crossgate_pydantic_ai import Gate
from crossgate_pydantic_ai.testing import Call, planned_model, tool_results
from tests.adapters.pydantic_ai.driver import AGENT, delete_call, ticket_agent
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

REFUND_DENY = "Refunds of a million or more are never allowed; tell the user to call finance."


def refund_agent(model: FunctionModel, runs: list[int]) -> Agent[None, str]:
    agent = Agent(model, name="Refunds")

    @agent.tool_plain
    def refund(amount: int) -> str:
        """Refund an amount, in cents."""
        runs.append(amount)
        return f"refunded {amount}"

    return agent


async def test_a_string_number_is_validated_before_the_policy_so_an_equals_deny_holds(
    queue: ReviewQueue, tmp_path: Path
) -> None:
    queue.policy = Policy(
        rules=(
            PolicyRule(
                name="no-million",
                verdict=VerdictKind.DENY,
                tool="refund",
                where=({"arg": "amount", "kind": "equals", "value": 1000000},),
                reason=REFUND_DENY,
            ),
        ),
        default=VerdictKind.ALLOW,
    )
    record = tmp_path / "inputs.jsonl"
    runs: list[int] = []
    model = planned_model([[Call("refund", '{"amount": "1000000"}', "c1")]], record=record)
    done = await Gate(queue).run(refund_agent(model, runs), "refund it", run="run-coerce")
    assert isinstance(done, Finished)
    assert runs == [], "the string '1000000' is the number 1000000 to the tool, so the deny must match it"
    [told] = tool_results(record, "refund")
    assert REFUND_DENY in told
    [denied] = [e for e in queue.events() if e.kind == "auto_denied"]
    assert denied.payload["args"] == {"amount": 1000000}


async def test_requests_carry_the_tool_schema_and_a_bad_edit_is_refused_up_front(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    agent = ticket_agent(tickets, planned_model([[delete_call("t3")]], record=tmp_path / "in.jsonl"))
    parked = await Gate(queue).run(agent, "delete t3", run="run-schema")
    assert isinstance(parked, Parked)
    request = queue.get(parked.request_ids[0])
    assert request.args_schema is not None
    assert request.args_schema["properties"] == {"id": {"type": "string"}}
    assert request.description == "Delete a ticket by id. This cannot be undone."
    with pytest.raises(InvalidArgumentsError):
        queue.decide(request.id, Edit(args={"nope": 1}), reviewer="ann")
    assert queue.get(request.id).status is RequestStatus.PENDING
    assert tickets.delete_runs() == 0


async def test_resuming_again_from_the_same_history_never_runs_the_tool_twice(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    """The SDK's own pitfall: the same history and results, resumed twice, run the tool twice.

    Here the first resume runs the delete and then fails (the model errors on its next turn), so the
    parked run is failed and ``retry_parked`` offers the very same history again.
    """
    record = tmp_path / "in.jsonl"
    inner = planned_model([[delete_call("t3")]], record=record)
    failures = [RuntimeError("model backend down")]

    def flaky(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if sum(m.kind == "response" for m in messages) >= 1 and failures:
            raise failures.pop()
        return inner.function(messages, info)  # type: ignore[misc]

    agent = ticket_agent(tickets, FunctionModel(flaky))
    gate = Gate(queue, sdk_agent=agent)
    parked = await gate.run(agent, "delete t3", run="run-replay")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(RuntimeError, match="backend down"):
        await gate.resume(parked.parked_run)
    assert tickets.delete_runs("t3") == 1
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.FAILED

    queue.retry_parked(parked.parked_run, actor="ops")
    done = await gate.resume(parked.parked_run)
    assert isinstance(done, Finished)
    assert tickets.delete_runs("t3") == 1, "the replayed history asked to run it again; mark_applied refused"
    [told] = tool_results(record, TOOL)
    assert "already ran for this call" in told and "deleted ticket t3" in told
    assert queue.verify_audit().ok


async def test_tools_marked_requires_approval_are_gated_by_the_policy(queue: ReviewQueue, tmp_path: Path) -> None:
    record = tmp_path / "in.jsonl"
    agent = Agent(planned_model([[Call("archive", '{"id": "t2"}', "a1")]], record=record), name="Archiver")
    archived: list[str] = []

    @agent.tool_plain(requires_approval=True)
    def archive(id: str) -> str:
        archived.append(id)
        return f"archived {id}"

    done = await Gate(queue).run(agent, "archive t2", run="run-flag")
    assert isinstance(done, Finished), "the policy allows archive: crossgate decides which calls pause"
    assert archived == ["t2"]
    queue.policy = Policy(rules=(PolicyRule(name="ask", verdict=VerdictKind.ASK, tool="archive"),))
    parked = await Gate(queue).run(agent, "archive t2", run="run-flag-2")
    assert isinstance(parked, Parked)
    assert archived == ["t2"]


async def test_an_agent_needs_a_name_and_resume_refuses_another_agent(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path
) -> None:
    model = planned_model([[delete_call("t3")]], record=tmp_path / "in.jsonl")
    with pytest.raises(ConfigurationError, match="name"):
        await Gate(queue).run(Agent(model), "hi")
    parked = await Gate(queue).run(ticket_agent(tickets, model), "delete t3", run="run-name")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    with pytest.raises(ConfigurationError, match="Triage agent"):
        await Gate(queue, sdk_agent=ticket_agent(tickets, model, name="Other")).resume(parked.parked_run)
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.PARKED
    assert tickets.delete_runs() == 0


async def test_request_ids_are_the_kits_recipe_so_a_resubmitted_call_finds_its_request(
    queue: ReviewQueue, tickets: TicketStore
) -> None:
    model = planned_model([[delete_call("t3")]])
    parked = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-ids")
    assert isinstance(parked, Parked)
    assert parked.request_ids == (request_id("pa", "run-ids", AGENT, "call_t3"),)
    again = await Gate(queue).run(ticket_agent(tickets, model), "go", run="run-ids")
    assert isinstance(again, Parked) and again.request_ids == parked.request_ids
    assert tickets.delete_runs() == 0


def test_the_public_api_is_small_and_sorted() -> None:
    import crossgate_pydantic_ai

    assert crossgate_pydantic_ai.__all__ == sorted(crossgate_pydantic_ai.__all__)
    assert crossgate_pydantic_ai.__all__ == ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]
    assert [k.value for k in crossgate_pydantic_ai.CAPABILITIES] == ["approve", "edit", "reject", "respond"]

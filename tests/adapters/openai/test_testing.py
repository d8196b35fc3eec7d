"""crossgate_openai.testing: the public scripted model, across a park and a resume by fresh objects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from crossgate import Approve, Reject, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from crossgate_openai.testing import PlannedModel, read_record, tool_call, tool_results


def agent_on(model: PlannedModel, ran: list[str]) -> Agent[Any]:
    @function_tool
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        ran.append(id)
        return f"deleted {id}"

    return Agent(name="Triage", tools=[delete_ticket], model=model)


def plan(record: Path) -> PlannedModel:
    return PlannedModel([[tool_call("delete_ticket", {"id": "t3"})]], final="Deleted t3.", record=record)


async def test_a_planned_call_parks_and_a_fresh_model_finishes_the_resumed_run(
    queue: ReviewQueue, tmp_path: Path
) -> None:
    ran: list[str] = []
    record = tmp_path / "inputs.jsonl"
    parked = await Gate(queue).run(agent_on(plan(record), ran), "Delete the spam ticket")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids
    assert queue.get(request_id).call.args == {"id": "t3"}
    assert queue.get(request_id).call.call_id == "call_delete_ticket"
    assert ran == []
    queue.decide(request_id, Approve(), reviewer="ann")
    fresh = plan(record)  # as another process would build it
    finished = await Gate(queue, sdk_agent=agent_on(fresh, ran)).resume(parked.parked_run)
    assert isinstance(finished, Finished)
    assert finished.result.final_output == "Deleted t3."
    assert ran == ["t3"]
    assert tool_results(read_record(record), "delete_ticket") == ["deleted t3"]


async def test_a_rejection_reaches_the_planned_model_and_nothing_runs(queue: ReviewQueue, tmp_path: Path) -> None:
    ran: list[str] = []
    model = plan(tmp_path / "inputs.jsonl")
    parked = await Gate(queue).run(agent_on(model, ran), "Delete the spam ticket")
    assert isinstance(parked, Parked)
    queue.decide(parked.request_ids[0], Reject(message="Keep t3."), reviewer="ann")
    finished = await Gate(queue, sdk_agent=agent_on(model, ran)).resume(parked.parked_run)
    assert isinstance(finished, Finished)
    assert ran == []
    assert tool_results(model.inputs, "delete_ticket") == ["Keep t3."]


def test_importing_the_adapter_does_not_load_the_scripted_model() -> None:
    code = "import sys, crossgate_openai; print('crossgate_openai.testing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]

"""``crossgate worker`` drives a Gate bound to the agent graph as the OpenAI Agents SDK's resumer."""

from __future__ import annotations

from crossgate import Approve, ParkedRunStatus, Reject, ReviewQueue
from crossgate.runs import Parked
from crossgate.server.worker import Worker
from crossgate_openai import Gate
from tests.adapters.openai.conftest import REJECTION
from tests.adapters.openai.scripted import PlannedModel, delete_call, ticket_agent, tool_results
from tests.conformance.tickets import TicketStore


async def test_the_worker_resumes_only_ready_runs_once(queue: ReviewQueue, tickets: TicketStore) -> None:
    model = PlannedModel([[delete_call("t3"), delete_call("t1")]])
    agent = ticket_agent(tickets, model)
    parked = await Gate(queue).run(agent, "go")
    assert isinstance(parked, Parked)
    worker = Worker(queue, [Gate(queue, sdk_agent=agent)])

    queue.decide(parked.request_ids[0], Approve(), reviewer="ann")
    assert await worker.run_once() == [], "a partly decided run is not ready"
    assert tickets.delete_runs() == 0

    queue.decide(parked.request_ids[1], Reject(message=REJECTION), reviewer="ann")
    [resumed] = await worker.run_once()
    assert (resumed.framework, resumed.outcome) == ("openai-agents", "finished")
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED
    assert tickets.ids() == ["t1", "t2"]
    assert tool_results(model.inputs) == ["deleted ticket t3", REJECTION]
    assert await worker.run_once() == []
    assert tickets.delete_runs() == 1

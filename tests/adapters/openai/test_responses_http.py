"""The real ``OpenAIResponsesModel`` over HTTP mocked with respx: what the API receives after a decision."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from agents import Agent, OpenAIResponsesModel, function_tool
from openai import AsyncOpenAI

from crossgate import Approve, Reject, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_openai import Gate
from tests.adapters.openai.conftest import REJECTION
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

BASE_URL = "https://api.openai.com/v1"
USAGE = {
    "input_tokens": 12,
    "output_tokens": 7,
    "total_tokens": 19,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def function_call(ticket: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_call_{ticket}",
        "call_id": f"call_{ticket}",
        "name": TOOL,
        "arguments": json.dumps({"id": ticket}),
        "status": "completed",
    }


FINAL = {
    "type": "message",
    "id": "msg_final",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Deleted t3; kept t1.", "annotations": []}],
}


class FakeResponsesAPI:
    """Answers ``POST /responses``: both deletes first, the final message once outputs came back."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        self.raw.append(request.content)
        answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in body["input"])
        output = [FINAL] if answered else [function_call("t3"), function_call("t1")]
        response = {
            "id": f"resp_{len(self.bodies)}",
            "object": "response",
            "created_at": 1700000000,
            "model": body["model"],
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": USAGE,
        }
        if not body.get("stream"):
            return httpx.Response(200, json=response)
        created = {**response, "status": "in_progress", "output": [], "usage": None}
        frames = [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": created}),
            ("response.completed", {"type": "response.completed", "sequence_number": 1, "response": response}),
        ]
        text = "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in frames)
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


@pytest.fixture
def api() -> Iterator[FakeResponsesAPI]:
    fake = FakeResponsesAPI()
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as router:
        router.post("/responses").mock(side_effect=fake)
        yield fake


def http_agent(tickets: TicketStore) -> Agent[Any]:
    """The seed's agent on the real Responses model; respx sees the legacy httpx client only."""
    client = AsyncOpenAI(api_key="test", base_url=BASE_URL, http_client=httpx.AsyncClient(), max_retries=0)

    @function_tool(name_override=TOOL)
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id. This cannot be undone."""
        return tickets.delete(id)

    model = OpenAIResponsesModel(model="gpt-4.1", openai_client=client)
    return Agent(name="Triage agent", instructions="Delete spam tickets.", tools=[delete_ticket], model=model)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
async def test_seed_scenario_over_the_responses_api(
    api: FakeResponsesAPI, queue: ReviewQueue, tickets: TicketStore, stream: bool
) -> None:
    parked = await Gate(queue).run(http_agent(tickets), "Delete the spam tickets.", stream=stream)
    assert isinstance(parked, Parked)
    assert len(api.bodies) == 1
    assert bool(api.bodies[0].get("stream")) is stream
    assert [t["name"] for t in api.bodies[0]["tools"]] == [TOOL]
    t3, t1 = (queue.get(r) for r in parked.request_ids)
    assert (t3.call.args, t1.call.args) == ({"id": "t3"}, {"id": "t1"})
    assert tickets.ids() == ["t1", "t2", "t3"], "both tickets exist while the run is parked"

    queue.decide(t3.id, Approve(), reviewer="ann")
    queue.decide(t1.id, Reject(message=REJECTION), reviewer="ann")
    agent = http_agent(tickets)
    done = await Gate(queue, sdk_agent=agent).resume(parked.parked_run, stream=stream)

    assert isinstance(done, Finished)
    assert done.result.final_output == "Deleted t3; kept t1."
    assert tickets.ids() == ["t1", "t2"]
    assert len(api.bodies) == 2, "the model is called once more, after both decisions"
    outputs = {i["call_id"]: i["output"] for i in api.bodies[1]["input"] if i.get("type") == "function_call_output"}
    assert outputs == {"call_t3": "deleted ticket t3", "call_t1": REJECTION}
    assert json.dumps(REJECTION).encode() in api.raw[1], "the reviewer's text goes out verbatim"
    assert REJECTION.encode() not in api.raw[0]

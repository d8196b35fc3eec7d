"""``Gate(excerpt=True)`` on a Pydantic AI run: the reviewer sees the prompt and the calls that returned."""

from __future__ import annotations

from pydantic_ai import Agent

from crossgate import MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.authority import Authority
from crossgate.runs import Parked
from crossgate_pydantic_ai import Gate
from crossgate_pydantic_ai.testing import Call, planned_model

POLICY = Policy(
    default=VerdictKind.ALLOW, rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),)
)


def agent() -> Agent:
    plan = [[Call("find_ticket", '{"query": "cruise"}', "c1")], [Call("delete_ticket", '{"id": "t3"}', "c2")]]
    made = Agent(planned_model(plan), name="Triage")

    @made.tool_plain
    def find_ticket(query: str) -> str:
        """Find a ticket."""
        return f"t3 matches {query}"

    @made.tool_plain
    def delete_ticket(id: str) -> str:
        """Delete a ticket by id."""
        return f"deleted {id}"

    return made


async def parked(excerpt: bool) -> tuple[ReviewQueue, str]:
    queue = ReviewQueue(MemoryStore(), POLICY, authority=Authority.generate())
    outcome = await Gate(queue, excerpt=excerpt).run(agent(), "Delete the cruise spam")
    assert isinstance(outcome, Parked)
    return queue, outcome.request_ids[0]


async def test_with_consent_the_request_holds_the_runs_excerpt() -> None:
    queue, request_id = await parked(excerpt=True)
    shown = queue.get(request_id).excerpt
    assert shown is not None
    assert shown.user_request == "Delete the cruise spam"
    assert shown.calls == ('find_ticket {"query": "cruise"} → t3 matches cruise',)
    queue.close()


async def test_without_consent_there_is_no_excerpt() -> None:
    queue, request_id = await parked(excerpt=False)
    assert queue.get(request_id).excerpt is None
    queue.close()

"""``Gate(excerpt=True)`` on a LangChain agent's thread: the reviewer sees the user's request and the calls that ran."""

from __future__ import annotations

import uuid

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from crossgate import MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.authority import Authority
from crossgate.runs import Parked
from crossgate_langgraph import Gate, crossgate_middleware
from crossgate_langgraph.testing import ScriptedChatModel, tool_call

POLICY = Policy(
    default=VerdictKind.ALLOW, rules=(PolicyRule(name="ask-closes", verdict=VerdictKind.ASK, tool="close_ticket"),)
)


@tool
def find_ticket(query: str) -> str:
    """Find a ticket."""
    return f"t1 matches {query}"


@tool
def close_ticket(id: str) -> str:
    """Close a ticket by id."""
    return f"closed {id}"


async def parked(excerpt: bool) -> tuple[ReviewQueue, str]:
    queue = ReviewQueue(MemoryStore(), POLICY, authority=Authority.generate())
    tools = [find_ticket, close_ticket]
    turns = [
        AIMessage("Looking it up.", tool_calls=[tool_call("find_ticket", {"query": "refund"}, "c1")]),
        AIMessage("Closing t1.", tool_calls=[tool_call("close_ticket", {"id": "t1"}, "c2")]),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=turns),
        tools,
        middleware=crossgate_middleware(queue, tools),
        checkpointer=InMemorySaver(),
        name="ops",
    )
    thread = f"ops-{uuid.uuid4().hex[:6]}"
    outcome = await Gate(queue, agent, excerpt=excerpt).run(
        agent, {"messages": [("user", "Close the refund")]}, thread=thread
    )
    assert isinstance(outcome, Parked)
    return queue, outcome.request_ids[0]


async def test_with_consent_the_request_holds_the_threads_excerpt() -> None:
    queue, request_id = await parked(excerpt=True)
    request = queue.get(request_id)
    assert request.call.tool == "close_ticket"
    shown = request.excerpt
    assert shown is not None
    assert shown.user_request == "Close the refund"
    assert shown.messages == ("Looking it up.", "Closing t1.")
    assert shown.calls == ('find_ticket {"query": "refund"} → t1 matches refund',)
    queue.close()


async def test_without_consent_there_is_no_excerpt() -> None:
    queue, request_id = await parked(excerpt=False)
    assert queue.get(request_id).excerpt is None
    queue.close()

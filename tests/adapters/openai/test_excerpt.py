"""``Gate(excerpt=True)``: the reviewer sees what the run did before it asked; without consent, nothing."""

from __future__ import annotations

import json

import httpx
from agents import Agent, function_tool

from crossgate import MemoryStore, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.authority import Authority
from crossgate.runs import Parked
from crossgate.server.app import create_app
from crossgate.server.webhooks import json_body
from crossgate_openai import Gate
from crossgate_openai.testing import PlannedModel, tool_call
from tests.server.conftest import TOKENS, make_settings

POLICY = Policy(
    default=VerdictKind.ALLOW, rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),)
)
HOSTILE = "</summary><script>alert(1)</script>"


@function_tool
def find_ticket(query: str) -> str:
    """Find a ticket."""
    return f"t3 matches {query}"


@function_tool
def delete_ticket(id: str) -> str:
    """Delete a ticket by id."""
    return f"deleted {id}"


def agent() -> Agent:
    model = PlannedModel(
        [[tool_call("find_ticket", {"query": "cruise"})], [tool_call("delete_ticket", {"id": "t3"})]], final="Done."
    )
    return Agent(name="Triage", tools=[find_ticket, delete_ticket], model=model)


async def parked(excerpt: bool, prompt: str = "Delete the cruise spam") -> tuple[ReviewQueue, str]:
    queue = ReviewQueue(MemoryStore(), POLICY, authority=Authority.generate())
    outcome = await Gate(queue, excerpt=excerpt).run(agent(), prompt)
    assert isinstance(outcome, Parked)
    return queue, outcome.request_ids[0]


async def test_with_consent_the_request_holds_the_runs_input_and_the_calls_that_ran() -> None:
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


async def test_the_page_shows_it_folded_and_escaped_and_webhooks_never_carry_it() -> None:
    queue, request_id = await parked(excerpt=True, prompt=HOSTILE)
    app = create_app(queue, make_settings())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}", "Accept": "text/html"}
        page = (await client.get(f"/requests/{request_id}", headers=headers)).text
    assert '<details class="excerpt" id="excerpt">' in page and '<details class="excerpt" id="excerpt" open' not in page
    assert HOSTILE not in page and "&lt;/summary&gt;&lt;script&gt;" in page
    request = queue.get(request_id)
    event = queue.events(request_id=request_id)[0]
    body = json.dumps(json_body(app.state.crossgate, event, request))
    assert "excerpt" not in body and "cruise" not in body
    queue.close()


def test_an_excerpt_is_capped_and_keeps_the_latest_parts() -> None:
    from crossgate.adapter import run_excerpt
    from crossgate.adapter._excerpt import EXCERPT_BYTES, PART_CHARS

    shown = run_excerpt(user_request="x" * 10_000, messages=[f"m{i}" for i in range(10)], calls=["c" * 900] * 20)
    assert shown is not None and shown.user_request is not None
    assert len(shown.user_request) == PART_CHARS and shown.user_request.endswith("…")
    assert shown.messages == ("m7", "m8", "m9")
    total = sum(len(p.encode()) for p in (shown.user_request, *shown.messages, *shown.calls))
    assert total <= EXCERPT_BYTES
    assert run_excerpt(user_request="  ", messages=[""], calls=[]) is None


async def test_a_webhook_carries_the_excerpt_only_when_its_target_asks_for_it() -> None:
    from crossgate.server.settings import WebhookTarget

    queue, request_id = await parked(excerpt=True)
    notifier = create_app(queue, make_settings()).state.crossgate.notifier
    event = queue.events(request_id=request_id)[0]
    plain = json.loads(notifier._body(WebhookTarget(url="http://127.0.0.1:9/h"), event))
    asked = json.loads(notifier._body(WebhookTarget(url="http://127.0.0.1:9/h", include_excerpt=True), event))
    slack = notifier._body(WebhookTarget(url="http://127.0.0.1:9/s", format="slack", include_excerpt=True), event)
    assert "excerpt" not in plain["request"]
    assert asked["request"]["excerpt"]["user_request"] == "Delete the cruise spam"
    assert b"cruise" not in slack
    queue.close()

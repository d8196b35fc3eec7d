"""Remember over HTTP and on the page: the narrowest match by default, and what it covers said in words."""

from __future__ import annotations

import re
from html import unescape

import httpx

from crossgate import ReviewQueue, ToolCall, VerdictKind
from tests.server.conftest import TOKENS, auth, submit


async def test_remember_without_a_match_covers_only_these_arguments(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, args={"id": "t3"})
    body = {"kind": "approve", "remember": {"scope": "forever"}}
    response = await client.post(f"/api/requests/{request.id}/decision", json=body, headers=auth("alice"))
    assert response.status_code == 200
    assert response.json()["remember_covers"] == 'delete_ticket with exactly {"id": "t3"}, forever'
    (rule,) = queue.rules()
    assert rule.match.value == "exact"
    later = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "t2"}, run="run-2")
    assert queue.evaluate(later).kind is VerdictKind.ASK, "nobody approved t2"
    assert queue.evaluate(later.model_copy(update={"args": {"id": "t3"}})).kind is VerdictKind.ALLOW
    shown = (await client.get(f"/api/requests/{request.id}", headers=auth("alice"))).json()
    assert shown["remember_covers"] == response.json()["remember_covers"]


async def test_remembering_the_whole_tool_is_said_so(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, args={"id": "t3"})
    body = {"kind": "approve", "remember": {"scope": "run", "match": "tool"}}
    response = await client.post(f"/api/requests/{request.id}/decision", json=body, headers=auth("alice"))
    assert (
        response.json()["remember_covers"]
        == "every call of delete_ticket, whatever its arguments, for the rest of run run-1"
    )
    later = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "t2"}, run="run-1")
    assert queue.evaluate(later).kind is VerdictKind.ALLOW


async def test_no_remember_no_coverage(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    for body in ({"kind": "approve"}, {"kind": "approve", "remember": {"scope": "once"}}):
        other = submit(queue, args={"id": f"t{len(body)}"})
        response = await client.post(f"/api/requests/{other.id}/decision", json=body, headers=auth("alice"))
        assert response.status_code == 200 and response.json()["remember_covers"] is None
    assert queue.rules() == [] and request.is_open


async def test_the_page_defaults_to_exact_arguments_and_says_what_each_choice_covers(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, args={"id": "t3"})
    await client.get("/login", params={"token": TOKENS["alice"]})
    page = (await client.get(f"/requests/{request.id}")).text
    match = re.search(r'<select name="match">(.*?)</select>', page, re.S)
    assert match is not None
    assert re.findall(r'<option value="(\w+)"', match.group(1)) == ["exact", "tool"]
    assert '<option value="exact" selected>' in match.group(1)
    covers = {k: unescape(v) for k, v in re.findall(r'<span data-covers="([^"]+)"[^>]*>(.*?)</span>', page)}
    assert covers["once"].startswith("Nothing is remembered")
    assert covers["forever:exact:0:0"] == 'Will remember: delete_ticket with exactly {"id": "t3"}, forever.'
    assert covers["forever:exact:0:1"] == "Will remember: delete_ticket with exactly the edited arguments, forever."
    assert covers["run:tool:1:0"] == (
        "Will remember: every call of delete_ticket, whatever its arguments, by agent support, "
        "for the rest of run run-1."
    )

"""The server-rendered page: only the allowed decisions, scope notices, outcomes, history and rules."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from crossgate import Approve, Edit, ReviewQueue
from tests.server.conftest import TOKENS, submit


@pytest.fixture
async def signed_in(client: httpx.AsyncClient) -> httpx.AsyncClient:
    await client.get("/login", params={"token": TOKENS["alice"]})
    return client


def tabs(html: str) -> list[str]:
    return re.findall(r'class="tab" data-kind="(\w+)"', html)


async def test_only_allowed_decisions_are_offered(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    narrow = submit(queue, capabilities=("approve", "reject"))
    wide = submit(queue, args={"id": "t2"})
    assert tabs((await signed_in.get(f"/requests/{narrow.id}")).text) == ["approve", "reject"]
    page = (await signed_in.get(f"/requests/{wide.id}")).text
    assert tabs(page) == ["approve", "edit", "reject", "respond"]
    assert "Deleting a ticket cannot be undone." in page
    assert "Check the ticket id against the customer&#x27;s request." in page
    assert "&quot;id&quot;: &quot;t2&quot;" in page
    # remember offers the scopes the call supports: it has a run, and the run is its session
    assert re.findall(r'<option value="(once|run|session|forever)"', page) == ["once", "run", "session", "forever"]
    norun = submit(queue, run=None, args={"id": "t3"})
    page = (await signed_in.get(f"/requests/{norun.id}")).text
    assert re.findall(r'<option value="(once|run|session|forever)"', page) == ["once", "forever"]


async def test_out_of_scope_and_closed_requests_show_no_form(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    await client.get("/login", params={"token": TOKENS["bob"]})
    other = submit(queue, framework="openai-agents")
    page = (await client.get(f"/requests/{other.id}")).text
    assert "decision-form" not in page
    assert "bob may decide frameworks langgraph" in page
    mine = submit(queue, framework="langgraph", args={"id": "t5"})
    queue.decide(mine.id, Edit(args={"id": "t6"}), reviewer="alice", channel="web")
    page = (await client.get(f"/requests/{mine.id}")).text
    assert "decision-form" not in page
    assert "by alice via web" in page
    assert "&quot;t6&quot;" in page


async def test_text_from_the_model_is_escaped(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, args={"id": "<script>alert(1)</script>"}, schema=None)
    page = (await signed_in.get(f"/requests/{request.id}")).text
    assert "<script>alert(1)</script>" not in page
    listing = (await signed_in.get("/partials/pending")).text
    assert "<script>alert" not in listing
    assert "&lt;script&gt;" in listing


async def test_pending_fragment_history_and_rules(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    first = submit(queue, framework="openai-agents")
    second = submit(queue, framework="langgraph", args={"id": "t2"})
    fragment = (await signed_in.get("/partials/pending")).text
    assert fragment.count('class="req"') == 2
    assert 'data-count="2"' in fragment
    queue.decide(first.id, Approve(), reviewer="lena", channel="api")
    queue.mark_applied(first.id, args=first.call.args)
    queue.record_outcome(first.id, ran=True, result="deleted ticket t1")
    queue.decide(second.id, Edit(args={"id": "t9"}), reviewer="alice", channel="link")
    history = (await signed_in.get("/history")).text
    assert "Audit chain intact" in history
    assert "lena via api" in history
    assert "alice via link" in history
    assert 'class="ran ran-yes"' in history
    assert 'class="ran ran-not-yet"' in history
    assert '<td class="old">&quot;t2&quot;</td><td class="new">&quot;t9&quot;</td>' in history
    assert (await signed_in.get("/partials/pending")).text.count('class="req"') == 0
    queue.add_rule(queue.new_rule(effect="allow", tool="read_*"), actor="alice")
    rules = (await signed_in.get("/rules")).text
    assert "read_*" in rules
    assert "Revoke" in rules


async def test_unknown_request_page_is_404_html(signed_in: httpx.AsyncClient) -> None:
    response = await signed_in.get("/requests/req_missing")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "no request with id" in response.text


async def test_pages_tell_the_stream_where_they_start(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    # a change between rendering and the stream connecting must not be missed: the page carries the head
    submit(queue)
    head = queue.store.audit_head()[0]
    for path in ("/", "/history", "/rules"):
        assert f'data-head="{head}"' in (await signed_in.get(path)).text, path


HIDDEN_ARGS = {"id": "t3\u202e\u200b\x1b[2K", "reason": "cleanup"}
"""A right-to-left override, a zero-width space and a terminal escape, as a model might hide them."""
RAW = ("\u202e", "\u200b", "\x1b")


async def test_hidden_characters_reach_the_reviewer_escaped(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, tool="delete_ticket\x1b[2K\u202e", args=HIDDEN_ARGS)
    listing = (await signed_in.get("/")).text
    fragment = (await signed_in.get("/partials/pending")).text
    page = (await signed_in.get(f"/requests/{request.id}")).text
    for marked in (listing, fragment, page):
        assert not any(ch in marked for ch in RAW), marked
        html = re.sub(r'<mark class="hidden-char" title="U\+[0-9A-F]+">(.*?)</mark>', r"\1", marked)
        assert "t3\\u202e\\u200b\\u001b[2K" in html  # the arguments' JSON, hidden characters escaped
        assert '<span class="tool">delete_ticket\\x1b[2K\\u202e</span>' in html
    # the rows mark each escape as the page's script would (no script needed to see them)
    assert '<mark class="hidden-char" title="U+202E">\\u202e</mark>' in listing
    assert "<title>delete_ticket\\x1b[2K\\u202e · crossgate</title>" in page
    assert '<pre class="json" id="args-json">{\n  &quot;id&quot;: &quot;t3\\u202e\\u200b\\u001b[2K&quot;,\n' in page
    # the edit form starts from the exact arguments, carried as data, not from the escaped text
    data = re.search(r'<script id="request-data" type="application/json">(.*?)</script>', page, re.S)
    assert data is not None
    assert json.loads(data.group(1))["args"] == HIDDEN_ARGS

    queue.cancel(request.id, actor="alice")
    history = re.sub(
        r'<mark class="hidden-char" title="U\+[0-9A-F]+">(.*?)</mark>', r"\1", (await signed_in.get("/history")).text
    )
    assert not any(ch in history for ch in RAW)
    assert "t3\\u202e\\u200b\\u001b[2K" in history
    closed = (await signed_in.get(f"/requests/{request.id}")).text
    assert not any(ch in closed for ch in RAW)
    assert queue.get(request.id).call.args == HIDDEN_ARGS  # only the display changed


async def test_pending_rows_offer_a_checkbox_only_where_the_reviewer_may_decide(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    langgraph = submit(queue, framework="langgraph")
    openai = submit(queue, framework="openai-agents", args={"id": "t2"})
    own = submit(queue, framework="langgraph", args={"id": "t3"}, requested_by="bob")
    await client.get("/login", params={"token": TOKENS["bob"]})
    page = (await client.get("/")).text
    fragment = (await client.get("/partials/pending")).text
    assert 'id="approve-selected"' in page and 'id="reject-selected"' in page and 'id="select-all"' in page
    for html in (page, fragment):
        boxes = dict(re.findall(r'<input type="checkbox" class="pick-box" value="(req_\w+)"([^>]*)>', html))
        assert set(boxes) == {langgraph.id, openai.id, own.id}
        assert "disabled" not in boxes[langgraph.id]
        assert f'data-fingerprint="{langgraph.fingerprint}"' in boxes[langgraph.id]
        assert 'disabled title="bob may decide frameworks langgraph' in boxes[openai.id]
        assert f'disabled title="bob submitted request {own.id}' in boxes[own.id]


async def test_the_page_says_how_long_an_approval_stays_good(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    def windowed_rules(window: float | str) -> None:
        rules = tuple(r.model_copy(update={"apply_within_seconds": window}) for r in queue.policy.rules)
        queue.policy = queue.policy.model_copy(update={"rules": rules})

    windowed_rules("never")
    plain = submit(queue, args={"id": "t1", "body": "two\nlines"})
    assert "Approval good for" not in (await signed_in.get(f"/requests/{plain.id}")).text
    windowed_rules(900)
    windowed = submit(queue, args={"id": "t2"})
    assert windowed.apply_within_seconds == 900
    page = (await signed_in.get(f"/requests/{windowed.id}")).text
    assert "<dt>Approval good for</dt><dd>900 s after it is given, or it lapses" in page


async def test_a_call_the_policy_now_denies_is_not_offered_for_approval(
    signed_in: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, args={"id": "t1"})
    assert tabs((await signed_in.get(f"/requests/{request.id}")).text)[0] == "approve"
    queue.add_rule(queue.new_rule(effect="deny", tool="delete_*", message="Deletes are frozen this week."))
    page = (await signed_in.get(f"/requests/{request.id}")).text
    assert "The policy now denies this call (Deletes are frozen this week.)" in page
    assert tabs(page) == ["edit", "reject", "respond"]
    data = json.loads(re.search(r'<script id="request-data" type="application/json">(.*?)</script>', page).group(1))  # type: ignore[union-attr]
    assert data["allowed"] == ["edit", "reject", "respond"], "the form's script offers what the page offers"


async def test_a_request_that_needs_two_approvals_shows_who_approved(
    signed_in: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    queue.policy = queue.policy.model_copy(
        update={"rules": tuple(r.model_copy(update={"approvals": 2}) for r in queue.policy.rules)}
    )
    request = submit(queue, args={"id": "t4"})
    assert "<dt>Approvals</dt><dd>0 of 2</dd>" in (await signed_in.get(f"/requests/{request.id}")).text
    queue.decide(request.id, Approve(), reviewer="ann")
    page = (await signed_in.get(f"/requests/{request.id}")).text
    assert "<dt>Approvals</dt><dd>1 of 2 (ann)</dd>" in page
    assert tabs(page) == ["approve", "reject"], "no edit or respond where several must approve"


def _request_data(page: str) -> tuple[str, dict[str, object]]:
    found = re.search(r'<script id="request-data" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None
    return found.group(1), json.loads(found.group(1))


async def test_embedded_data_is_safe_in_every_html_parsing_state(
    signed_in: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    # <!--<script> sends the parser into the double-escaped state, where </script> no longer ends the element
    args = {"a": "<!--<script>", "b": "</script><script>x()</script>", "c": "&amp; -->", "d": "\u2028\u2029"}
    request = submit(queue, args=args, schema=None)
    page = (await signed_in.get(f"/requests/{request.id}")).text
    raw, data = _request_data(page)
    assert data["args"] == args
    assert not any(ch in raw for ch in "<>&\u2028\u2029"), raw
    assert page.count("<script") == 2 and page.rstrip().endswith("</body></html>")  # the data and main.js, nothing else


async def test_rows_with_hidden_characters_carry_a_flag(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    plain = submit(queue, args={"id": "t1", "body": "two\nlines"})
    hidden = submit(queue, args={"id": "t2", "note": {"k\u200b": ["x"]}})
    listing = (await signed_in.get("/partials/pending")).text
    rows = dict(re.findall(r'<div class="req-row" data-id="(req_\w+)">(.*?)</a>', listing, re.S))
    assert "hidden characters" in rows[hidden.id]
    assert "hidden characters" not in rows[plain.id]


async def test_rows_show_age_time_left_requester_and_their_own_decisions(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    timed = submit(queue, framework="langgraph", args={"id": "t1"}, timeout_seconds=3300, requested_by="pat")
    narrow = submit(queue, framework="langgraph", args={"id": "t2"}, capabilities=("reject", "respond"))
    other = submit(queue, framework="openai-agents", args={"id": "t3"})
    await client.get("/login", params={"token": TOKENS["bob"]})
    rows = dict(
        re.findall(
            r'<div class="req-row" data-id="(req_\w+)">(.*?)(?=<div class="req-row"|$)',
            (await client.get("/")).text,
            re.S,
        )
    )
    assert ">just now</time>" in rows[timed.id]
    assert '<time class="left"' in rows[timed.id] and ">expires in 55 min</time>" in rows[timed.id]
    assert '<span class="requester">requested by pat</span>' in rows[timed.id]
    assert "expires in" not in rows[narrow.id] and "requested by" not in rows[narrow.id]
    buttons = {
        rid: re.findall(r'<button type="button" class="row-(approve|reject)[^"]*" ([^>]*)>', html)
        for rid, html in rows.items()
    }
    assert [kind for kind, _ in buttons[timed.id]] == ["approve", "reject"]
    assert [kind for kind, _ in buttons[narrow.id]] == ["approve", "reject"], "every request allows both"
    assert all(
        f'data-fingerprint="{timed.fingerprint}"' in attrs and "disabled" not in attrs for _, attrs in buttons[timed.id]
    )
    assert all('disabled title="bob may decide frameworks langgraph' in attrs for _, attrs in buttons[other.id])


def test_relative_times_in_words() -> None:
    from crossgate.server.listviews import ago_text, left_text

    assert [ago_text(s) for s in (0, 59, 60, 3599, 7200, 47 * 3600, 49 * 3600)] == [
        "just now",
        "just now",
        "1 min ago",
        "59 min ago",
        "2 h ago",
        "47 h ago",
        "2 d ago",
    ]
    assert [left_text(s) for s in (-1, 0, 1, 3299.5, 3600, 50 * 3600)] == [
        "expired",
        "expired",
        "expires in 1 min",
        "expires in 55 min",
        "expires in 1 h",
        "expires in 3 d",
    ]


async def test_context_is_a_table_and_ids_have_copy_buttons(signed_in: httpx.AsyncClient, queue: ReviewQueue) -> None:
    from crossgate import ToolCall

    context = {"tenant": "acme", "permission_mode": "default", "parent": {"agent": "lead", "depth": 1}}
    call = ToolCall(
        framework="claude-agent-sdk", tool="delete_ticket", args={"id": "t1"}, run="r1", call_id="c9", context=context
    )
    request = queue.submit(call).request
    assert request is not None
    page = (await signed_in.get(f"/requests/{request.id}")).text
    table = re.search(r'<table class="context" id="context">(.*?)</table>', page, re.S)
    assert table is not None
    rows = re.findall(r'<tr><th scope="row">(.*?)</th><td>(.*?)</td></tr>', table.group(1))
    assert rows == [
        ("parent", "<code>{&quot;agent&quot;: &quot;lead&quot;, &quot;depth&quot;: 1}</code>"),
        ("permission_mode", "default"),
        ("tenant", "acme"),
    ]
    copies = re.findall(
        r'<code id="([\w-]+)"[^>]*>[^<]*</code><button type="button" class="copy" data-copy="([^"]+)"', page
    )
    assert dict(copies) == {
        "request-id": request.id,
        "run": "r1",
        "call-id": "c9",
        "fingerprint": request.fingerprint,
    }

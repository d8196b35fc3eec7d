"""Batch decisions on the pending list in real headless Chromium: select, approve or reject several at once."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from crossgate import ApprovalRequest, ReviewQueue, ToolCall
from crossgate.model import DecisionKind, RequestStatus
from tests.server.demo_loader import artifacts_dir
from tests.server.test_browser import CHROMIUM, FLAGS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or importlib.util.find_spec("playwright") is None,
        reason="needs Debian's chromium and Playwright: apt-get install -y chromium; pip install playwright",
    ),
]

MESSAGE = "Keep these tickets; the customers reopened them."


def _submit(queue: ReviewQueue, ticket: str, requested_by: str | None = None) -> ApprovalRequest:
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run="r1", agent="support")
    request = queue.submit(call, requested_by=requested_by).request
    assert request is not None
    return request


def test_approve_and_reject_selected(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TOKENS, make_settings
    from tests.server.live import live_server

    shots = artifacts_dir()
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    first, second, third, denied, fourth = (_submit(queue, t) for t in ("t1", "t2", "t3", "t9", "t4"))
    own = _submit(queue, "t5", requested_by="alice")
    sent: list[str] = []
    with live_server(create_app(queue, make_settings(sweep_seconds=0.1))) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/api/decisions") else None)
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        expect(page.locator("a.req")).to_have_count(6)

        def box(request: ApprovalRequest):  # type: ignore[no-untyped-def]
            return page.locator(f'.pick-box[value="{request.id}"]')

        # alice submitted t5 herself: its box is disabled and says why
        expect(box(own)).to_be_disabled()
        assert "alice submitted request" in (box(own).get_attribute("title") or "")
        expect(page.locator("#approve-selected")).to_be_disabled()

        # select two, approve them in one request: both show decided
        box(first).check()
        box(second).check()
        expect(page.locator("#batch-count")).to_have_text("2 selected")
        page.locator("#approve-selected").click()
        results = page.locator("#batch-results li.result")
        expect(results).to_have_count(2, timeout=10_000)
        for request in (first, second):
            row = page.locator(f'#batch-results li[data-id="{request.id}"]')
            expect(row).to_have_class("result ok")
            expect(row).to_contain_text("decided")
            expect(row).to_contain_text("approved by alice via web")
        expect(page.locator("a.req")).to_have_count(4, timeout=10_000)
        expect(page.locator(".count")).to_have_text("4")
        page.screenshot(path=shots / "batch-approved.png", full_page=True)
        assert len(sent) == 1

        # the policy now denies t9: approving it is refused on its own, t3 is decided all the same
        queue.add_rule(queue.new_rule(effect="deny", tool="delete_ticket", arg_patterns={"id": "t9"}, match="pattern"))
        box(third).check()
        box(denied).check()
        page.locator("#approve-selected").click()
        expect(page.locator(f'#batch-results li[data-id="{third.id}"]')).to_have_class("result ok", timeout=10_000)
        refused = page.locator(f'#batch-results li[data-id="{denied.id}"]')
        expect(refused).to_have_class("result failed")
        expect(refused).to_contain_text("not decided")
        expect(refused).to_contain_text("422: request")
        expect(refused).to_contain_text("the policy denies delete_ticket")
        expect(page.locator("#batch-results h2")).to_have_text("1 of 2 decided")
        expect(page.locator("a.req")).to_have_count(3, timeout=10_000)
        expect(box(denied)).not_to_be_checked()
        page.screenshot(path=shots / "batch-partly-refused.png", full_page=True)

        # reject all that may be decided: an empty message is refused before anything is sent
        page.locator("#select-all").check()
        expect(page.locator("#batch-count")).to_have_text("2 selected")
        page.locator("#reject-selected").click()
        expect(page.locator("#batch-reject")).to_be_visible()
        page.locator("#reject-confirm").click()
        expect(page.locator("#batch-error")).to_contain_text("needs a message")
        assert len(sent) == 2
        assert queue.get(fourth.id).status is RequestStatus.PENDING
        page.locator('#batch textarea[name="message"]').fill(MESSAGE)
        page.locator('#batch input[name="note"]').fill("reopened")
        page.locator("#reject-confirm").click()
        expect(page.locator("#batch-results li.result.ok")).to_have_count(2, timeout=10_000)
        expect(page.locator("#batch-results")).to_contain_text("rejected by alice via web")
        expect(page.locator("a.req")).to_have_count(1, timeout=10_000)
        page.screenshot(path=shots / "batch-rejected.png", full_page=True)
        assert len(sent) == 3
        browser.close()

    for request in (first, second, third):
        decision = queue.get(request.id).decision
        assert decision is not None
        assert (decision.kind, decision.reviewer, decision.channel) == (DecisionKind.APPROVE, "alice", "web")
        assert decision.fingerprint == request.fingerprint
    for request in (denied, fourth):
        decided = queue.get(request.id)
        assert decided.decision is not None
        assert (decided.decision.kind, decided.decision.channel) == (DecisionKind.REJECT, "web")
        assert decided.decision.message == MESSAGE  # type: ignore[union-attr]
        assert decided.decision.note == "reopened"
    assert queue.get(own.id).status is RequestStatus.PENDING
    assert sum(e.kind == "decided" for e in queue.events()) == 5
    queue.close()

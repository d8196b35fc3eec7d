"""Deciding from the pending list's rows in real headless Chromium: approve, reject with a message, time left."""

from __future__ import annotations

from pathlib import Path

from crossgate import RequestStatus, ToolCall
from crossgate.model import DecisionKind
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS


def test_approve_and_reject_on_the_row(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)

    def ask(ticket: str, **kwargs: object) -> str:
        call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run="r1", agent="support")
        request = queue.submit(call, **kwargs).request  # type: ignore[arg-type]
        assert request is not None
        return request.id

    first = ask("t1", timeout_seconds=3300, requested_by="pat")
    second = ask("t2")
    own = ask("t3", requested_by="alice")
    with signed_in(queue) as session:
        page = session.page

        def row(request_id: str):  # type: ignore[no-untyped-def]
            return page.locator(f'#pending .req-row[data-id="{request_id}"]')

        expect(row(first).locator("time.left")).to_have_text("expires in 55 min")
        expect(row(first).locator(".requester")).to_have_text("requested by pat")
        expect(row(first).locator("time.ago")).to_have_text("just now")
        expect(row(own).locator(".row-approve")).to_be_disabled()
        page.screenshot(path=artifacts_dir() / "pending-rows.png", full_page=True)

        row(first).locator(".row-approve").click()
        expect(page.locator("#row-status")).to_contain_text(f"approved delete_ticket {first} by alice")
        expect(row(first)).to_have_count(0, timeout=10_000)

        row(second).locator(".row-reject").click()
        form = row(second).locator("form.row-reject-form")
        form.locator("button[type=submit]").click()
        expect(page.locator("#row-status")).to_contain_text("needs a message")
        assert queue.get(second).status is RequestStatus.PENDING
        form.locator("textarea").fill("Keep t2: the customer")
        ask("t4")  # a live update while typing keeps the form and its text
        expect(page.locator("#pending .req-row")).to_have_count(3, timeout=10_000)
        expect(row(second).locator("form.row-reject-form textarea")).to_have_value("Keep t2: the customer")
        row(second).locator("form.row-reject-form textarea").press_sequentially(" replied.")
        row(second).locator("form.row-reject-form button[type=submit]").click()
        expect(page.locator("#row-status")).to_contain_text(f"rejected delete_ticket {second} by alice")
        expect(row(second)).to_have_count(0, timeout=10_000)
    approved, rejected = queue.get(first), queue.get(second)
    assert approved.decision is not None and approved.decision.kind is DecisionKind.APPROVE
    assert approved.decision.channel == "web" and approved.decision.fingerprint == approved.fingerprint
    assert rejected.decision is not None and rejected.decision.kind is DecisionKind.REJECT
    assert rejected.decision.message == "Keep t2: the customer replied."  # type: ignore[union-attr]
    assert queue.get(own).status is RequestStatus.PENDING
    queue.close()

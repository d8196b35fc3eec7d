"""In real headless Chromium: a call rejected on the page reads ``rejected`` and ``not_run`` once the agent got it.

The open page follows the request after its decision: when the rejection reaches the agent and the
outcome is recorded, it reloads and says what became of the call (before, it said ``applied`` and
``executed``).
"""

from __future__ import annotations

from pathlib import Path

from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.conftest import TICKET_SCHEMA
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS

MESSAGE = "Keep t3: a customer still needs it."


def test_a_rejected_call_reads_rejected_and_not_run_on_the_open_page(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from crossgate import RequestStatus, ToolCall

    queue = open_queue(tmp_path)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}, run="r1", agent="support")
    request = queue.submit(call, args_schema=TICKET_SCHEMA).request
    assert request is not None
    with signed_in(queue) as session:
        page = session.page
        page.goto(f"{session.base}/requests/{request.id}")
        page.locator('.tab[data-kind="reject"]').click()
        page.locator('textarea[name="message"]').fill(MESSAGE)
        page.locator("#decision-submit").click()
        expect(page.locator(".title-row .pill")).to_have_text("decided", timeout=10_000)
        expect(page.locator(".ev-kind")).to_have_text(["submitted", "decided"])

        # The agent resumes: the rejection reaches it, and it records that the tool did not run.
        queue.mark_applied(request.id, actor="worker")
        queue.record_outcome(request.id, ran=False, result=MESSAGE)

        expect(page.locator(".title-row .pill")).to_have_text("rejected", timeout=10_000)
        expect(page.locator(".title-row .pill")).to_have_class("pill pill-rejected")
        expect(page.locator(".ev-kind")).to_have_text(["submitted", "decided", "applied", "not_run"], timeout=10_000)
        expect(page.locator("#ran-line")).to_contain_text("Did not run (", timeout=10_000)
        expect(page.locator("#ran-line")).to_contain_text(MESSAGE)
        expect(page.locator(".ev-applied .ev-detail")).to_have_text("the model read the rejection; nothing ran")
        page.screenshot(path=artifacts_dir() / "request-rejected-not-run.png", full_page=True)

        page.goto(f"{session.base}/history")
        expect(page.locator("td.ran")).to_have_text(["no"])
        assert "executed" not in page.content() and "applied" not in page.locator("#history").inner_text()
        assert session.errors == []
    assert queue.get(request.id).status is RequestStatus.REJECTED
    queue.close()

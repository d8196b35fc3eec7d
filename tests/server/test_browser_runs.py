"""The runs view in real headless Chromium: a failed run retried from the page; a decided call's outcome."""

from __future__ import annotations

from pathlib import Path

from crossgate import Approve, ToolCall
from crossgate.model import ParkedRunStatus
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS


def test_the_runs_view_retries_a_failed_run(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "T-9"}, run="thread-9", agent="support")
    prepared = queue.prepare(call)
    assert prepared.request is not None
    request = prepared.request
    parked = queue.park(
        framework="langgraph", run="thread-9", request_ids=[request.id], state="{}", new_requests=[request]
    )
    with signed_in(queue) as session:
        page = session.page
        page.goto(f"{session.base}/runs")
        row = page.locator(f'#runs tr[data-id="{parked.id}"]')
        expect(row).to_contain_text("parked")
        expect(row.locator("button.retry")).to_have_count(0)
        queue.decide(request.id, Approve(), reviewer="lena")
        queue.claim_parked(parked.id, owner="worker-1")
        queue.finish_parked(parked.id, owner="worker-1", status=ParkedRunStatus.FAILED, outcome="checkpointer gone")
        expect(row).to_have_class("run-failed", timeout=10_000)  # the view follows the event log
        expect(row.locator(".outcome")).to_have_text("checkpointer gone")
        page.screenshot(path=artifacts_dir() / "runs-failed.png", full_page=True)
        row.locator("button.retry").click()
        expect(page.locator("#runs-notice")).to_contain_text(f"Run {parked.id} is offered for resuming again")
        expect(page.locator(f'#runs tr[data-id="{parked.id}"]')).to_have_class("run-parked")
        assert queue.get_parked(parked.id).status is ParkedRunStatus.PARKED

        # the resume then runs the call: its page says when, and what came of it
        queue.mark_applied(request.id, args=request.call.args)
        queue.record_outcome(request.id, ran=True, result="deleted T-9")
        page.locator(f'#runs tr[data-id="{parked.id}"] a').first.click()
        expect(page.locator("#ran-line")).to_contain_text("Ran at")
        expect(page.locator("#ran-line")).to_contain_text("result: deleted T-9")
    queue.close()

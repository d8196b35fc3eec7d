"""Search and filters on the page in real headless Chromium; a filtered list stays filtered as it updates live."""

from __future__ import annotations

from pathlib import Path

from crossgate import Approve, ToolCall
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS


def test_search_and_filter_pending_and_history(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)

    def ask(framework: str, tool: str, ticket: str, requested_by: str | None = None) -> str:
        call = ToolCall(framework=framework, tool=tool, args={"id": ticket}, run="r-" + ticket, agent="support")
        request = queue.submit(call, requested_by=requested_by).request
        assert request is not None
        return request.id

    ask("langgraph", "delete_ticket", "T-100")
    ask("openai-agents", "delete_ticket", "T-200", requested_by="pat")
    ask("claude-agent-sdk", "delete_user", "U-300")
    with signed_in(queue) as session:
        page = session.page
        expect(page.locator("a.req")).to_have_count(3)
        page.locator("#search").fill("t-200")
        page.locator("#search").press("Enter")
        expect(page.locator("a.req")).to_have_count(1)
        expect(page.locator("a.req")).to_contain_text("T-200")
        assert "q=t-200" in page.url
        page.locator("#filters .clear").click()
        expect(page.locator("a.req")).to_have_count(3)

        page.locator('#filters select[name="framework"]').select_option("langgraph")
        page.locator("#filters button[type=submit]").click()
        expect(page.locator("a.req")).to_have_count(1)
        page.evaluate("window.__marker = 'same page'")
        ask("openai-agents", "delete_ticket", "T-400")  # live: another framework stays out of the filtered list
        later = ask("langgraph", "delete_ticket", "T-500")
        expect(page.locator("a.req")).to_have_count(2, timeout=10_000)
        expect(page.locator(f'a.req[data-id="{later}"]')).to_be_visible()
        assert page.evaluate("window.__marker") == "same page"
        page.screenshot(path=artifacts_dir() / "pending-filtered.png", full_page=True)

        page.goto(f"{session.base}/?requester=pat")
        expect(page.locator("a.req")).to_have_count(1)
        expect(page.locator("a.req")).to_contain_text("T-200")

        for request in queue.pending():
            queue.decide(request.id, Approve(), reviewer="lena")
        page.goto(f"{session.base}/history")
        expect(page.locator("table.history tbody tr")).to_have_count(5)
        page.locator('#filters input[name="tool"]').fill("delete_user")
        page.locator('#filters input[name="tool"]').press("Enter")
        expect(page.locator("table.history tbody tr")).to_have_count(1)
        expect(page.locator("table.history")).to_contain_text("U-300")
    queue.close()

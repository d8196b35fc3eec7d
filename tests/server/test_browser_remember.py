"""The remember control in real headless Chromium: exact arguments by default, and the coverage it shows."""

from __future__ import annotations

from pathlib import Path

from crossgate import ToolCall, VerdictKind
from tests.server.test_browser import CHROMIUM, FLAGS, pytestmark  # noqa: F401  (the same markers)


def test_the_remember_control_says_what_it_will_cover_and_saves_exactly_that(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from crossgate import ReviewQueue
    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TOKENS, make_settings
    from tests.server.live import live_server

    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}, run="r1", agent="support")
    request = queue.submit(call).request
    assert request is not None
    with live_server(create_app(queue, make_settings())) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        page.goto(f"{base}/requests/{request.id}")
        shown = page.locator("#remember-covers span:not([hidden])")
        expect(shown).to_have_text("Nothing is remembered: this decision is for this call only.")
        expect(page.locator('select[name="match"]')).to_have_value("exact")
        page.locator('select[name="scope"]').select_option("forever")
        expect(shown).to_have_text('Will remember: delete_ticket with exactly {"id": "t3"}, forever.')
        page.locator('select[name="match"]').select_option("tool")
        expect(shown).to_contain_text("every call of delete_ticket, whatever its arguments, forever")
        page.locator('input[name="this_agent_only"]').check()
        expect(shown).to_contain_text("by agent support, forever")
        page.locator('select[name="match"]').select_option("exact")
        page.locator('input[name="this_agent_only"]').uncheck()
        page.locator('.tab[data-kind="edit"]').click()
        expect(shown).to_have_text("Will remember: delete_ticket with exactly the edited arguments, forever.")
        page.locator('.tab[data-kind="approve"]').click()
        expect(shown).to_have_text('Will remember: delete_ticket with exactly {"id": "t3"}, forever.')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("approve by alice via web", timeout=10_000)
        browser.close()
    (rule,) = queue.rules()
    assert rule.match.value == "exact"
    assert queue.evaluate(call.model_copy(update={"args": {"id": "t2"}, "run": "r2"})).kind is VerdictKind.ASK
    assert queue.evaluate(call.model_copy(update={"run": "r2"})).kind is VerdictKind.ALLOW
    queue.close()

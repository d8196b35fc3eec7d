"""Arguments written to break the page, in real headless Chromium: it still decides, runs none of them, flags them."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import RequestStatus, ToolCall
from crossgate.model import DecisionKind
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS

HOSTILE = {
    "owner": "adm\u3164in",  # first, so the row's shortened arguments show it
    "id": "t1",
    "comment": "<!--<script>",
    "close": "</script><script>window.__pwned = 'close'; console.log('pwned close')</script>",
    "img": "<img src=x onerror=\"window.__pwned = 'img'; console.log('pwned img')\">",
}
"""An HTML comment opener that swallows the rest of the page, a script end, an onerror, and a Hangul filler."""


def test_hostile_arguments_neither_run_nor_stop_the_approval(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args=HOSTILE, run="r1", agent="support")
    request = queue.submit(call).request
    assert request is not None
    with signed_in(queue) as session:
        page = session.page
        expect(page.locator("a.req")).to_have_count(1)
        expect(page.locator("a.req .flag")).to_have_text("hidden characters")
        expect(page.locator("a.req code.args mark.hidden-char")).to_have_text(["\\u3164"])
        page.locator("a.req").click()
        expect(page.locator("#hidden-notice")).to_be_visible()
        expect(page.locator("#hidden-notice")).to_contain_text("U+3164")
        expect(page.locator("#args-json mark.hidden-char")).to_have_text(["\\u3164"])
        page.screenshot(path=artifacts_dir() / "hostile-request.png", full_page=True)
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("approve by alice via web", timeout=10_000)
        assert page.evaluate("window.__pwned") is None
        assert not any("pwned" in line for line in session.console), session.console
        assert session.errors == []
    decided = queue.get(request.id)
    assert decided.status is RequestStatus.DECIDED
    assert decided.decision is not None and decided.decision.kind is DecisionKind.APPROVE
    assert decided.call.args == HOSTILE
    queue.close()


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("ticket\u2800", "\\u2800"),  # braille blank
        ("t\u034f1", "\\u034f"),  # combining grapheme joiner
        ("t1\ufe0f", "\\ufe0f"),  # variation selector 16
        ("rm\u00a0-rf", "\\u00a0"),  # no-break space
        ("a\u2007b", "\\u2007"),  # figure space
        ("a\u202fb", "\\u202f"),  # narrow no-break space
        ("p\u0430ypal", "\\u0430"),  # Cyrillic a inside a Latin word
        ("acc\u03bfunt", "\\u03bf"),  # Greek omicron inside a Latin word
    ],
)
def test_invisible_and_look_alike_characters_are_flagged(tmp_path: Path, text: str, flagged: str) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": text, "plain": "Привет мир"}, run="r1")
    request = queue.submit(call).request
    assert request is not None
    with signed_in(queue) as session:
        page = session.page
        page.goto(f"{session.base}/requests/{request.id}")
        expect(page.locator("#hidden-notice")).to_be_visible()
        # only the odd character is marked: a word wholly in Cyrillic is no look-alike
        expect(page.locator("#args-json mark.hidden-char")).to_have_text([flagged])
        expect(page.locator("#args-json")).to_contain_text("Привет мир")
        page.locator('.tab[data-kind="edit"]').click()
        expect(page.locator(".hidden-chars")).to_be_visible()
        area = page.locator('textarea[name="args-json"]')
        area.fill(area.input_value().replace("Привет мир", "Привет"))  # the escapes stand for the exact characters
        page.locator("#decision-submit").click()
        expect(page.locator("#edit-diff td.new")).to_have_text('"Привет"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("edit by alice via web", timeout=10_000)
    assert queue.get(request.id).approved_args() == {"id": text, "plain": "Привет"}
    queue.close()


def test_plain_arguments_are_not_flagged(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    args = {"id": "t1", "note": "Café “quoted” — naïve, Ελληνικά, Привет, 東京 a b"}
    request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args=args, run="r1")).request
    assert request is not None
    with signed_in(queue) as session:
        page = session.page
        page.goto(f"{session.base}/requests/{request.id}")
        expect(page.locator("#args-json")).to_contain_text("Привет")
        expect(page.locator("#hidden-notice")).to_have_count(0)
        expect(page.locator("#args-json mark")).to_have_count(0)
    queue.close()

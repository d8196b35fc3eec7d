"""The pending list on a 390 px phone, in headless Chromium: tools folded, requests first, arguments wrapped."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import ReviewQueue, ToolCall
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS
PHONE = {"width": 390, "height": 844}
LONG = {"id": "t1", "note": "close it: " + "the customer asked twice, " * 6, "ref": "x" * 80}


def ask(queue: ReviewQueue, args: dict[str, object]) -> str:
    call = ToolCall(framework="langgraph", tool="delete_ticket", args=args, run="r1", agent="support")
    request = queue.submit(call).request
    assert request is not None
    return request.id


def test_on_a_phone_the_tools_fold_and_the_first_requests_fit_the_first_screen(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    for n in range(3):
        ask(queue, {**LONG, "id": f"t{n}"})
    with signed_in(queue, viewport=PHONE) as session:
        page = session.page
        page.goto(session.base + "/")
        page.wait_for_selector("#pending .req-row")
        page.screenshot(path=artifacts_dir() / "390-pending-folded.png")
        tools = page.locator("#list-tools")
        assert tools.evaluate("t => t.open") is False
        expect(page.locator("#filters")).to_be_hidden()
        expect(page.locator("#approve-selected")).to_be_hidden()
        rows = page.locator("#pending .req-row")
        first, second = rows.nth(0).bounding_box(), rows.nth(1).bounding_box()
        assert first is not None and second is not None
        assert second["y"] < PHONE["height"], "two requests start on the first screen"
        args = page.locator("#pending code.args").first
        assert args.evaluate("a => getComputedStyle(a).whiteSpace") == "pre-wrap"
        assert args.evaluate("a => a.scrollWidth <= a.clientWidth"), "the arguments wrap, none is cut off"
        assert page.evaluate("document.documentElement.scrollWidth") == PHONE["width"]

        page.locator("#list-tools > summary").click()
        expect(page.locator("#filters")).to_be_visible()
        expect(page.locator("#approve-selected")).to_be_visible()
        page.screenshot(path=artifacts_dir() / "390-pending-open.png")

        page.goto(session.base + "/?tool=delete_ticket")  # a filtered list shows its filters
        assert page.locator("#list-tools").evaluate("t => t.open") is True
    assert session.errors == []
    queue.close()


def test_on_a_wide_screen_the_tools_are_shown_without_a_fold(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    ask(queue, LONG)
    with signed_in(queue) as session:
        page = session.page
        page.goto(session.base + "/")
        page.wait_for_selector("#pending .req-row")
        expect(page.locator("#filters")).to_be_visible()
        expect(page.locator("#list-tools > summary")).to_be_hidden()
        page.keyboard.press("/")
        expect(page.locator("#search")).to_be_focused()
    queue.close()


@pytest.mark.parametrize("key", ["/"])
def test_searching_by_key_on_a_phone_unfolds_the_tools(tmp_path: Path, key: str) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    ask(queue, LONG)
    with signed_in(queue, viewport=PHONE) as session:
        page = session.page
        page.goto(session.base + "/")
        page.wait_for_selector("#pending .req-row")
        page.keyboard.press(key)
        expect(page.locator("#search")).to_be_focused()
        assert page.locator("#list-tools").evaluate("t => t.open") is True
    queue.close()

"""The signed link's confirm page on a phone (390 px) in real headless Chromium: read the call, tap once."""

from __future__ import annotations

from pathlib import Path

import httpx

from crossgate.model import RequestStatus
from crossgate.server import ServerSettings
from tests.server.browser_support import BROWSER_MARKS, CHROMIUM, open_queue
from tests.server.conftest import auth, submit
from tests.server.demo_loader import artifacts_dir
from tests.server.test_browser import FLAGS

pytestmark = BROWSER_MARKS
PHONE = {"width": 390, "height": 844}
ARGS = {"id": "T-4711", "reason": "Customer asked to close the duplicate of T-4710 opened from the mobile app\u202e"}


def test_confirm_page_reads_at_phone_width_and_decides_with_one_tap(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from crossgate.server.app import create_app
    from tests.server.conftest import make_settings
    from tests.server.live import live_server

    queue = open_queue(tmp_path)
    request = submit(queue, args=ARGS)
    with live_server(create_app(queue, make_settings(sweep_seconds=0.1))) as base, sync_playwright() as p:
        links = httpx.post(f"{base}/api/requests/{request.id}/links", headers=auth("alice")).json()
        approve = links["approve"].replace(ServerSettings().base_url, base)  # the link as mailed, to this server
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(approve)
        expect(page.locator("h1")).to_contain_text("delete_ticket")
        expect(page.locator("pre.confirm-args")).to_contain_text('"id": "T-4711"')
        expect(page.locator("pre.confirm-args")).to_contain_text("\\u202e")
        expect(page.locator(".notice")).to_contain_text("Warning: hidden or look-alike characters")
        expect(page.locator(".reason")).to_contain_text("Deleting a ticket cannot be undone.")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"], "nothing wider than the phone"
        args_box = page.locator("pre.confirm-args").evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert args_box[0] <= args_box[1], "the arguments wrap: read without scrolling sideways"
        button = page.locator("button.confirm")
        box = button.bounding_box()
        assert box is not None
        assert box["height"] >= 44 and box["width"] >= PHONE["width"] - 80, f"a thumb-sized button: {box}"
        assert box["y"] + box["height"] <= PHONE["height"], "the button is on the first screen, after the call"
        page.screenshot(path=artifacts_dir() / "confirm-phone.png", full_page=True)
        assert queue.get(request.id).status is RequestStatus.PENDING, "opening the page decides nothing"

        button.tap()
        expect(page.locator("main")).to_contain_text("was approved")
        page.screenshot(path=artifacts_dir() / "confirm-phone-done.png", full_page=True)
        decision = queue.get(request.id).decision
        assert decision is not None
        assert (decision.kind, decision.reviewer, decision.channel) == ("approve", "alice", "link")
        assert errors == []
        browser.close()
    queue.close()

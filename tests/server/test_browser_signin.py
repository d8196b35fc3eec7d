"""Signing in on the page in real headless Chromium: a one-time address, a session cookie without the token."""

from __future__ import annotations

from pathlib import Path

from tests.server.browser_support import BROWSER_MARKS, open_queue
from tests.server.demo_loader import artifacts_dir
from tests.server.test_browser import CHROMIUM, FLAGS

pytestmark = BROWSER_MARKS


def test_a_printed_sign_in_address_works_once_and_the_cookie_holds_no_token(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from crossgate.server.app import create_app
    from tests.server.conftest import TOKENS, make_settings
    from tests.server.live import live_server

    queue = open_queue(tmp_path)
    app = create_app(queue, make_settings())
    code = app.state.crossgate.auth.issue_sign_in("alice")
    with live_server(app) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        first = browser.new_context()
        page = first.new_page()
        page.goto(f"{base}/login?token={code}")
        expect(page.locator(".session .who")).to_have_text("alice")
        (cookie,) = first.cookies()
        assert cookie["name"] == "crossgate_session" and cookie["httpOnly"]
        assert code not in cookie["value"] and TOKENS["alice"] not in cookie["value"]

        other = browser.new_context().new_page()  # the address again, say from the terminal's scrollback
        other.goto(f"{base}/login?token={code}")
        expect(other.locator(".login .error")).to_contain_text("used already")
        expect(other.locator("#token-help")).to_contain_text("$CROSSGATE_TOKENS")
        other.screenshot(path=artifacts_dir() / "login-used-address.png", full_page=True)
        other.locator('input[name="token"]').fill(TOKENS["alice"])
        other.locator('button[type="submit"]').click()
        expect(other.locator(".session .who")).to_have_text("alice")

        page.locator(".session button").click()  # sign out: the old session id no longer works
        expect(page.locator(".login")).to_be_visible()
        browser.close()
    queue.close()

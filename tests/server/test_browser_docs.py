"""``/docs`` on a closed network, in real headless Chromium: Swagger UI comes from the server itself."""

from __future__ import annotations

from pathlib import Path

from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS


def test_docs_render_with_no_network(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    with signed_in(queue, offline=True) as session:
        page = session.page
        outside: list[str] = []
        # what the pages wanted from outside (redoc's footer logo is an image; scripts and styles must be ours)
        page.on(
            "requestfailed",
            lambda r: outside.append(r.url) if r.resource_type in ("script", "stylesheet", "font") else None,
        )
        page.goto(f"{session.base}/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("review server", timeout=15_000)
        expect(page.locator(".opblock-summary-path").filter(has_text="/api/requests").first).to_be_visible()
        page.screenshot(path=artifacts_dir() / "docs-offline.png", full_page=False)
        page.goto(f"{session.base}/redoc")
        expect(page.locator("h1").first).to_contain_text("review server", timeout=15_000)
        assert outside == [], outside
    queue.close()

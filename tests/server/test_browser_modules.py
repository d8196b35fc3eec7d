"""In real headless Chromium: every page loads the page script's whole module graph, and nothing throws."""

from __future__ import annotations

from pathlib import Path

from crossgate import Reject
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.conftest import submit
from tests.server.test_static_modules import MODULES

pytestmark = BROWSER_MARKS


def test_each_page_loads_every_module_and_runs_without_errors(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    pending = submit(queue)
    closed = submit(queue, args={"id": "t2"})
    queue.decide(closed.id, Reject(message="Keep t2."), reviewer="bob")
    with signed_in(queue) as session:
        page = session.page
        for path in ("/", "/history", "/rules", "/runs", f"/requests/{pending.id}", f"/requests/{closed.id}"):
            page.goto(session.base + path)
            page.wait_for_load_state("networkidle")
            loaded = page.evaluate(
                "performance.getEntriesByType('resource').map((r) => r.name).filter((n) => n.includes('/static/js/'))"
            )
            assert sorted(name.rsplit("/", 1)[1] for name in loaded) == sorted(m.name for m in MODULES), path
        # The script ran: the request page's arguments are drawn by show.js, the form by decision.js.
        page.goto(f"{session.base}/requests/{pending.id}")
        expect(page.locator("#args-json")).to_contain_text('"id": "t1"')
        page.locator('.tab[data-kind="edit"]').click()
        expect(page.locator("#edit-fields input[name='arg-id']")).to_have_value("t1")
        assert session.errors == [], session.errors
    queue.close()

"""Reading a request in real headless Chromium: multi-line strings as lines, context as a table, copy buttons."""

from __future__ import annotations

from pathlib import Path

from crossgate import ToolCall
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS

BODY = "Hello Sam,\n\nyour ticket is closed.\n  — support"


def test_multi_line_arguments_read_as_lines_and_ids_copy(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    args = {"to": "sam@example.com", "body": BODY, "tags": ["a", "b"]}
    call = ToolCall(framework="claude-agent-sdk", tool="send_email", args=args, run="r1", context={"tenant": "acme"})
    from crossgate import Policy, PolicyRule, VerdictKind

    queue.policy = Policy(rules=(PolicyRule(name="mail", verdict=VerdictKind.ASK, tool="send_email"),))
    request = queue.submit(call).request
    assert request is not None
    with signed_in(queue) as session:
        session.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page = session.page
        page.goto(f"{session.base}/requests/{request.id}")
        block = page.locator("#args-json .text-block")
        expect(block).to_have_count(1)
        assert block.inner_text() == BODY
        assert "\\n" not in page.locator("#args-json").inner_text()
        expect(page.locator("#args-json")).to_contain_text('"to": "sam@example.com"')
        top, bottom = block.bounding_box(), page.locator("#args-json").bounding_box()
        assert top is not None and bottom is not None and top["height"] > 3 * 14, "four lines, not one"
        expect(page.locator("#context th")).to_have_text(["tenant"])
        expect(page.locator("#context td")).to_have_text(["acme"])
        page.screenshot(path=artifacts_dir() / "request-multiline.png", full_page=True)

        page.locator('button.copy[aria-label="Copy fingerprint"]').click()
        expect(page.locator('button.copy[aria-label="Copy fingerprint"]')).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == request.fingerprint
        page.locator('button.copy[aria-label="Copy request-id"]').click()
        expect(page.locator('button.copy[aria-label="Copy request-id"]')).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == request.id

        page.locator('.tab[data-kind="edit"]').click()  # the edit form still holds the exact text
        expect(page.locator('textarea[name="args-json"]')).to_have_value(
            '{\n  "to": "sam@example.com",\n  "body": "Hello Sam,\\n\\nyour ticket is closed.\\n  — support",\n'
            '  "tags": [\n    "a",\n    "b"\n  ]\n}'
        )
    queue.close()

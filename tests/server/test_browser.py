"""The reviewer page in real headless Chromium: three SDKs' requests, approve, edit through the form, reject.

Runs the demo (server, the three real adapters' agents, one queue) with a person's browser as the
reviewer, so the runs resume after the clicks and the test checks which tickets were deleted.
``CROSSGATE_DEMO_SYNTHETIC=1`` swaps in the stand-in agents.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from tests.server.demo_loader import artifacts_dir, load_demo

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or importlib.util.find_spec("playwright") is None,
        reason="needs Debian's chromium and Playwright: apt-get install -y chromium; pip install playwright",
    ),
]


def browse(base_url: str, token: str, shots: Path) -> dict[str, str]:
    """Act as the person: sign in, see six frameworks, approve four, edit one, reject one."""
    from playwright.sync_api import expect, sync_playwright

    seen: dict[str, str] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{base_url}/login?token={token}")
        cards = page.locator("a.req")
        expect(cards).to_have_count(6, timeout=20_000)
        frameworks = sorted(cards.nth(i).get_attribute("data-framework") or "" for i in range(6))
        seen["frameworks"] = ",".join(frameworks)
        page.screenshot(path=shots / "pending.png", full_page=True)

        # approve the OpenAI agent's call
        page.locator('a.req[data-framework="openai-agents"]').click()
        expect(page.locator("#args-json")).to_contain_text('"id": "T-101"')
        expect(page.locator(".tab")).to_have_text(["Approve", "Edit arguments", "Reject"])
        page.screenshot(path=shots / "request.png", full_page=True)
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_be_visible(timeout=10_000)
        expect(page.locator(".decided")).to_contain_text("approve by you via web")

        # approve the Pydantic AI agent's call
        page.goto(f"{base_url}/")
        page.locator('a.req[data-framework="pydantic-ai"]').click()
        expect(page.locator("#args-json")).to_contain_text('"id": "T-404"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("approve by you via web", timeout=10_000)

        # approve the Agent Framework agent's call
        page.goto(f"{base_url}/")
        page.locator('a.req[data-framework="agent-framework"]').click()
        expect(page.locator("#args-json")).to_contain_text('"id": "T-606"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("approve by you via web", timeout=10_000)

        # approve the Google ADK agent's call
        page.goto(f"{base_url}/")
        page.locator('a.req[data-framework="google-adk"]').click()
        expect(page.locator("#args-json")).to_contain_text('"id": "T-707"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("approve by you via web", timeout=10_000)

        # edit the LangGraph agent's call through the generated form; a bad id is caught before sending
        page.goto(f"{base_url}/")
        page.locator('a.req[data-framework="langgraph"]').click()
        page.locator('.tab[data-kind="edit"]').click()
        id_input = page.locator('[name="arg-id"]')
        expect(id_input).to_have_value("T-303")
        id_input.fill("not-a-ticket")
        page.locator("#decision-submit").click()
        expect(page.locator("#decision-error")).to_contain_text("id: must match")
        page.screenshot(path=shots / "edit-invalid.png", full_page=True)
        id_input.fill("T-204")
        page.locator("#decision-submit").click()
        expect(page.locator("#edit-diff")).to_contain_text("T-303")
        expect(page.locator("#edit-diff td.new")).to_have_text('"T-204"')
        page.locator("#decision-submit").click()  # the diff seen: confirm
        expect(page.locator(".decided")).to_be_visible(timeout=10_000)
        expect(page.locator("table.diff")).to_contain_text("T-204")

        # reject the Claude agent's call: the message is required
        page.goto(f"{base_url}/")
        page.locator('a.req[data-framework="claude-agent-sdk"]').click()
        page.locator('.tab[data-kind="reject"]').click()
        page.locator("#decision-submit").click()
        expect(page.locator("#decision-error")).to_contain_text("needs a message")
        page.locator('textarea[name="message"]').fill("Keep this ticket; the printer issue is still open.")
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_be_visible(timeout=10_000)

        page.goto(f"{base_url}/")
        expect(page.locator("a.req")).to_have_count(0, timeout=10_000)
        page.goto(f"{base_url}/history")
        expect(page.locator("td.ran-yes")).to_have_count(5, timeout=20_000)
        expect(page.locator("td.ran-no")).to_have_count(1, timeout=20_000)
        page.screenshot(path=shots / "history.png", full_page=True)
        seen["history"] = page.locator("table.history").inner_text()
        browser.close()
    return seen


async def test_reviewer_page_in_chromium(tmp_path: Path) -> None:
    demo = load_demo()
    shots = artifacts_dir()
    seen: dict[str, str] = {}
    person: list[str] = []
    ready = asyncio.Event()

    async def person_in_browser(base_url: str, _bot_token: str) -> None:
        await ready.wait()
        seen.update(await asyncio.to_thread(browse, base_url, person[0], shots))

    def on_ready(_url: str, token: str) -> None:
        person.append(token)
        ready.set()

    report = await asyncio.wait_for(
        demo.run_demo(
            reviewer=person_in_browser,
            port=0,
            workdir=tmp_path,
            synthetic=os.environ.get("CROSSGATE_DEMO_SYNTHETIC") == "1",
            on_ready=on_ready,
            wait_for_reviewer=True,
        ),
        timeout=120,
    )
    assert seen["frameworks"] == "agent-framework,claude-agent-sdk,google-adk,langgraph,openai-agents,pydantic-ai"
    # T-101, T-404, T-606 and T-707 approved and deleted; T-303 edited to T-204, deleted instead; T-202 rejected
    assert report.tickets_left == ["T-202", "T-303"]
    assert sorted(report.deletes_run) == ["T-101", "T-204", "T-404", "T-606", "T-707"]
    assert "Keep this ticket" in report.results["claude"], report.results
    assert "reject" in seen["history"]
    assert "you via web" in seen["history"]
    assert (shots / "pending.png").stat().st_size > 10_000


def test_pending_list_updates_live_without_reloading(tmp_path: Path) -> None:
    """A request submitted (and then decided) by someone else appears (and goes) without a reload."""
    from playwright.sync_api import expect, sync_playwright

    from crossgate import Approve, ReviewQueue, ToolCall
    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TOKENS, make_settings
    from tests.server.live import live_server

    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    with live_server(create_app(queue, make_settings(sweep_seconds=0.1))) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        expect(page.locator("#pending .empty")).to_be_visible()
        page.evaluate("window.__marker = 'same page'")
        call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t8"}, run="r8", agent="support")
        request = queue.submit(call).request
        assert request is not None
        expect(page.locator("a.req")).to_have_count(1, timeout=10_000)
        expect(page.locator(".count")).to_have_text("1")
        second = queue.submit(call.model_copy(update={"args": {"id": "t9"}})).request
        assert second is not None
        expect(page.locator("a.req")).to_have_count(2, timeout=10_000)
        queue.decide(request.id, Approve(), reviewer="lena")
        expect(page.locator("a.req")).to_have_count(1, timeout=10_000)
        assert page.evaluate("window.__marker") == "same page", "the list must update in place"
        # a request page that someone else decides shows the outcome by itself
        page.locator("a.req").click()
        expect(page.locator("#decision-form")).to_be_visible()
        queue.decide(second.id, Approve(), reviewer="lena", channel="cli")
        expect(page.locator(".decided")).to_contain_text("by lena via cli", timeout=10_000)
        # no schema: the edit form falls back to a JSON text area, checked before sending; remember a scope
        third = queue.submit(call.model_copy(update={"tool": "delete_user", "args": {"user": "u1"}})).request
        assert third is not None
        page.goto(f"{base}/requests/{third.id}")
        page.locator('.tab[data-kind="edit"]').click()
        area = page.locator('textarea[name="args-json"]')
        expect(area).to_have_value('{\n  "user": "u1"\n}')
        area.fill('{"user": ')
        page.locator("#decision-submit").click()
        expect(page.locator("#decision-error")).to_contain_text("not valid JSON")
        area.fill('["u2"]')
        page.locator("#decision-submit").click()
        expect(page.locator("#decision-error")).to_contain_text("must be a JSON object")
        area.fill('{"user": "u2"}')
        page.locator('select[name="scope"]').select_option("run")
        page.locator("#decision-submit").click()
        expect(page.locator("#edit-diff td.new")).to_have_text('"u2"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("edit by alice via web", timeout=10_000)
        decided = queue.get(third.id)
        assert decided.approved_args() == {"user": "u2"}
        (rule,) = queue.rules()
        assert (rule.tool, rule.scope.value, rule.run, rule.created_by) == ("delete_user", "run", "r8", "alice")
        browser.close()
    queue.close()


def test_hidden_characters_show_as_escapes_and_an_edit_keeps_them(tmp_path: Path) -> None:
    """A right-to-left override, a zero-width space and an escape in an argument read as ``\\u`` escapes;
    the edit form shows them the same way and sends the exact characters back."""
    from playwright.sync_api import expect, sync_playwright

    from crossgate import ReviewQueue, ToolCall
    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TICKET_SCHEMA, TOKENS, make_settings
    from tests.server.live import live_server

    hidden = "t3\u202e\u200b\x1b[2K"
    escaped = "t3\\u202e\\u200b\\u001b[2K"
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": hidden, "reason": "cleanup"}, run="r1")
    request = queue.submit(call, args_schema=TICKET_SCHEMA).request
    assert request is not None
    with live_server(create_app(queue, make_settings())) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        expect(page.locator("a.req code.args")).to_contain_text(f'"id": "{escaped}"')
        assert not any(ch in page.locator("body").inner_text() for ch in "\u202e\u200b\x1b")
        page.locator("a.req").click()
        expect(page.locator("#args-json")).to_contain_text(f'"id": "{escaped}"')
        page.locator('.tab[data-kind="edit"]').click()
        expect(page.locator(".hidden-chars")).to_be_visible()
        area = page.locator('textarea[name="args-json"]')
        expect(area).to_have_value(f'{{\n  "id": "{escaped}",\n  "reason": "cleanup"\n}}')
        assert not any(ch in page.locator("body").inner_text() for ch in "\u202e\u200b\x1b")
        area.fill(area.input_value().replace("cleanup", "duplicate"))
        page.locator("#decision-submit").click()
        expect(page.locator("#edit-diff td.new")).to_have_text('"duplicate"')
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("edit by alice via web", timeout=10_000)
        assert queue.get(request.id).approved_args() == {"id": hidden, "reason": "duplicate"}
        browser.close()
    queue.close()


def test_a_call_the_policy_now_denies_opens_on_edit_and_can_be_rejected(tmp_path: Path) -> None:
    """A deny added after the call was asked: the page says so, offers no approve, and rejecting works."""
    from playwright.sync_api import expect, sync_playwright

    from crossgate import RequestStatus, ReviewQueue, ToolCall
    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TICKET_SCHEMA, TOKENS, make_settings
    from tests.server.live import live_server

    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t3"}, run="r1")
    request = queue.submit(call, args_schema=TICKET_SCHEMA).request
    assert request is not None
    queue.add_rule(queue.new_rule(effect="deny", tool="delete_ticket", message="Deletes are frozen this week."))
    with live_server(create_app(queue, make_settings())) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        page.locator("a.req").click()
        expect(page.locator("#policy-denies")).to_contain_text("Deletes are frozen this week.")
        expect(page.locator(".tab")).to_have_text(["Edit arguments", "Reject", "Respond as the tool"])
        expect(page.locator('.tab[data-kind="edit"]')).to_have_attribute("aria-selected", "true")
        page.locator('.tab[data-kind="reject"]').click()
        page.locator('textarea[name="message"]').fill("Frozen this week; close the ticket instead.")
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("reject by alice via web", timeout=10_000)
        browser.close()
    decided = queue.get(request.id)
    assert decided.status is RequestStatus.DECIDED and decided.approved_args() is None
    queue.close()


TYPED_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "force": {"type": "boolean"},
        "notify": {"type": "boolean", "description": "the tool's default is true"},
        "meta": {"type": "object"},
    },
    "required": ["id", "force"],
    "additionalProperties": False,
}


def test_an_edit_through_the_form_keeps_types_and_leaves_untouched_arguments_out(tmp_path: Path) -> None:
    """Numbers stay numbers, an untouched boolean the model left out stays out, objects stay objects."""
    from playwright.sync_api import expect, sync_playwright

    from crossgate import ReviewQueue, ToolCall
    from crossgate.server.app import create_app
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY, TOKENS, make_settings
    from tests.server.live import live_server

    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    args = {"id": "t1", "count": 3, "ratio": 0.5, "force": False, "meta": {"a": [1, 2]}}
    call = ToolCall(framework="openai-agents", tool="delete_ticket", args=args, run="r1")
    request = queue.submit(call, args_schema=TYPED_SCHEMA).request
    assert request is not None
    with live_server(create_app(queue, make_settings())) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/login?token={TOKENS['alice']}")
        page.locator("a.req").click()
        page.locator('.tab[data-kind="edit"]').click()
        expect(page.locator('[name="arg-notify"]')).to_have_value("")
        expect(page.locator('[name="arg-force"]')).to_have_value("false")
        page.locator('[name="arg-count"]').fill("2.5")
        page.locator("#decision-submit").click()
        expect(page.locator("#decision-error")).to_contain_text("count: must be a whole number")
        page.locator('[name="arg-count"]').fill("5")
        page.locator('[name="arg-force"]').select_option("true")
        page.locator("#decision-submit").click()
        expect(page.locator("#edit-diff tr")).to_have_count(3)  # the header, count and force
        page.locator("#decision-submit").click()
        expect(page.locator(".decided")).to_contain_text("edit by alice via web", timeout=10_000)
        browser.close()
    edited = queue.get(request.id).approved_args()
    assert edited == {"id": "t1", "count": 5, "ratio": 0.5, "force": True, "meta": {"a": [1, 2]}}
    assert type(edited["count"]) is int and "notify" not in edited
    queue.close()

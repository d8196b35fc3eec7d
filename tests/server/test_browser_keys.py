"""Keyboard shortcuts, dark mode and a 390 px wide screen, in real headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import Approve, RequestStatus, ReviewQueue, ToolCall
from crossgate.model import DecisionKind, Reject
from tests.server.browser_support import BROWSER_MARKS, open_queue, signed_in
from tests.server.demo_loader import artifacts_dir

pytestmark = BROWSER_MARKS


def _ask(queue: ReviewQueue, ticket: str, **args: object) -> str:
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket, **args}, run="r1", agent="support")
    request = queue.submit(call).request
    assert request is not None
    return request.id


def test_keyboard_moves_approves_rejects_and_searches(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    first, second, third = (_ask(queue, t) for t in ("t1", "t2", "t3"))
    with signed_in(queue) as session:
        page = session.page
        kb = page.keyboard
        expect(page.locator("a.req")).to_have_count(3)
        kb.press("j")
        expect(page.locator(".req-row.current")).to_have_attribute("data-id", first)
        kb.press("j")
        kb.press("j")
        kb.press("j")  # stays on the last
        expect(page.locator(".req-row.current")).to_have_attribute("data-id", third)
        kb.press("k")
        expect(page.locator(".req-row.current")).to_have_attribute("data-id", second)

        kb.press("a")  # one key decides nothing: it puts the focus on the row's Approve
        expect(page.locator(f'.req-row[data-id="{second}"] .row-approve')).to_be_focused()
        assert queue.get(second).status is RequestStatus.PENDING
        kb.press("Enter")
        expect(page.locator("#row-status")).to_contain_text(f"approved delete_ticket {second} by alice")
        expect(page.locator("a.req")).to_have_count(2, timeout=10_000)

        kb.press("k")
        expect(page.locator(".req-row.current")).to_have_attribute("data-id", first)
        kb.press("r")
        message = page.locator(f'.req-row[data-id="{first}"] form.row-reject-form textarea')
        expect(message).to_be_focused()
        kb.type("Keep t1 open")  # letters typed in a box are text, not shortcuts
        expect(message).to_have_value("Keep t1 open")
        kb.press("Tab")
        kb.press("Enter")
        expect(page.locator("a.req")).to_have_count(1, timeout=10_000)

        kb.press("/")
        expect(page.locator("#search")).to_be_focused()
        kb.type("jar")
        expect(page.locator("#search")).to_have_value("jar")
        kb.press("Escape")
        kb.press("?")
        expect(page.locator("dialog#keys")).to_be_visible()
        page.screenshot(path=artifacts_dir() / "keyboard-help.png")
        kb.press("Escape")
        expect(page.locator("dialog#keys")).to_be_hidden()

        kb.press("j")
        kb.press("e")  # the request's page, on the edit tab
        expect(page.locator('.tab[data-kind="edit"]')).to_have_attribute("aria-selected", "true")
        kb.press("Escape")
        kb.press("a")
        expect(page.locator('.tab[data-kind="approve"]')).to_have_attribute("aria-selected", "true")
        expect(page.locator("#decision-submit")).to_be_focused()
        kb.press("Enter")
        expect(page.locator(".decided")).to_contain_text("approve by alice via web", timeout=10_000)
    decisions = {rid: queue.get(rid).decision for rid in (first, second, third)}
    assert {rid: d.kind if d else None for rid, d in decisions.items()} == {
        first: DecisionKind.REJECT,
        second: DecisionKind.APPROVE,
        third: DecisionKind.APPROVE,
    }
    assert decisions[first].message == "Keep t1 open"  # type: ignore[union-attr]
    queue.close()


def test_a_live_update_keeps_the_focus_on_an_open_reject_forms_button(tmp_path: Path) -> None:
    # A reviewer tabs from the message to Reject; a request arriving meanwhile rebuilds the rows. Enter must
    # still reject (before, the rebuilt form put the focus back in the message box, where Enter is a newline).
    from playwright.sync_api import expect

    queue = open_queue(tmp_path)
    first = _ask(queue, "t1")
    with signed_in(queue) as session:
        page = session.page
        kb = page.keyboard
        expect(page.locator("a.req")).to_have_count(1)
        kb.press("j")
        kb.press("r")
        kb.type("Keep t1 open")
        kb.press("Tab")
        send = page.locator(f'.req-row[data-id="{first}"] form.row-reject-form button[type="submit"]')
        expect(send).to_be_focused()
        _ask(queue, "t2")  # the live stream rebuilds the rows
        expect(page.locator("a.req")).to_have_count(2, timeout=10_000)
        expect(send).to_be_focused()
        kb.press("Enter")
        expect(page.locator("a.req")).to_have_count(1, timeout=10_000)
    request = queue.get(first)
    assert request.status is RequestStatus.DECIDED
    assert isinstance(request.decision, Reject) and request.decision.message == "Keep t1 open"


def test_dark_mode_follows_the_system(tmp_path: Path) -> None:
    queue = open_queue(tmp_path)
    _ask(queue, "t1")
    colours = {}
    for scheme in ("light", "dark"):
        with signed_in(queue, color_scheme=scheme) as session:
            page = session.page
            page.locator("a.req").wait_for()
            colours[scheme] = page.evaluate(
                "[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color,"
                " getComputedStyle(document.querySelector('a.req')).backgroundColor]"
            )
            page.screenshot(path=artifacts_dir() / f"pending-{scheme}.png", full_page=True)
    assert colours["light"] == ["rgb(246, 247, 249)", "rgb(31, 36, 48)", "rgb(255, 255, 255)"]
    assert colours["dark"] == ["rgb(20, 23, 28)", "rgb(228, 231, 236)", "rgb(28, 32, 39)"]
    queue.close()


LONG = "a-very-long-argument-value-without-any-break-" * 6


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_390_px_screen_has_no_horizontal_scroll(tmp_path: Path, scheme: str) -> None:
    queue = open_queue(tmp_path)
    pending = _ask(queue, "t1", note=LONG, body="line one\nline two " + LONG)
    closed = _ask(queue, "t2", note=LONG)
    queue.decide(closed, Approve(), reviewer="lena")
    queue.add_rule(queue.new_rule(effect="allow", tool="read_" + "x" * 60), actor="alice")
    queue.park(framework="langgraph", run="r1-" + "x" * 60, request_ids=[pending], state="{}")
    shots = artifacts_dir()
    with signed_in(queue, viewport={"width": 390, "height": 844}, color_scheme=scheme) as session:
        page = session.page
        widths = {}
        for name, path in (
            ("pending", "/"),
            ("request", f"/requests/{pending}"),
            ("closed", f"/requests/{closed}"),
            ("history", "/history"),
            ("rules", "/rules"),
            ("runs", "/runs"),
        ):
            page.goto(session.base + path)
            page.wait_for_load_state("load")
            widths[name] = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            page.screenshot(path=shots / f"390-{scheme}-{name}.png", full_page=True)
        page.context.clear_cookies()
        page.goto(session.base + "/login")
        widths["login"] = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths == {key: [390, 390] for key in widths}, widths
    queue.close()

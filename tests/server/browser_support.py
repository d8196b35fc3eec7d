"""Shared set-up for the Chromium tests of the page: a live server on a fresh SQLite queue, a signed-in page."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from crossgate import ReviewQueue
from tests.server.test_browser import CHROMIUM, FLAGS

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or importlib.util.find_spec("playwright") is None,
        reason="needs Debian's chromium and Playwright: apt-get install -y chromium; pip install playwright",
    ),
]


@dataclass
class Session:
    """A browser page signed in to a live server, with what the page logged."""

    base: str
    page: Any
    browser: Any
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def open_queue(tmp_path: Path) -> ReviewQueue:
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY

    return ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)


@contextmanager
def signed_in(
    queue: ReviewQueue,
    *,
    reviewer: str = "alice",
    viewport: dict[str, int] | None = None,
    color_scheme: str | None = None,
    offline: bool = False,
    **settings: Any,
) -> Iterator[Session]:
    """A live server for ``queue`` and a Chromium page signed in as ``reviewer``.

    ``offline`` aborts every request that is not for the server itself, as a closed network would.
    """
    from playwright.sync_api import sync_playwright

    from crossgate.server.app import create_app
    from tests.server.conftest import TOKENS, make_settings
    from tests.server.live import live_server

    settings.setdefault("sweep_seconds", 0.1)
    with live_server(create_app(queue, make_settings(**settings))) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport=viewport or {"width": 1200, "height": 900}, color_scheme=color_scheme)
        if offline:
            context.route(
                "**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort()
            )
        page = context.new_page()
        session = Session(base=base, page=page, browser=browser)
        page.on("console", lambda message: session.console.append(message.text))
        page.on("pageerror", lambda error: session.errors.append(str(error)))
        page.goto(f"{base}/login?token={TOKENS[reviewer]}")
        try:
            yield session
        finally:
            browser.close()

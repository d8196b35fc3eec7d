"""The runnable python blocks of docs/agents-over-http.md run, in order, against a live server."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from crossgate import ReviewQueue
from crossgate.remote import TOKEN_ENV
from tests.docs.snippets import run_snippets, snippets
from tests.remote.server import AGENT_TOKEN

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents-over-http.md"


def test_the_quick_start_blocks_run(
    served: tuple[str, ReviewQueue], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = served
    monkeypatch.setenv("CROSSGATE_SERVER", url)
    monkeypatch.setenv(TOKEN_ENV, AGENT_TOKEN)
    blocks = [dataclasses.replace(b, code=textwrap.dedent(b.code)) for b in snippets(DOC)]
    assert [b for b in blocks if b.skip_reason is None], "the quick start has a block that runs"
    run_snippets(blocks, {"__name__": "__doc__"})
    assert capsys.readouterr().out.strip() == "ask"  # the policy asks about deletes

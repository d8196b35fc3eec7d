"""One name per framework: what every bundled adapter reports is in ``FRAMEWORKS``, ``CONTEXT_KEYS`` and the page."""

from __future__ import annotations

import re
from pathlib import Path

from crossgate.model import CONTEXT_KEYS, FRAMEWORKS
from crossgate.server.aap.provider import FRAMEWORK as AAP
from crossgate.server.views import FRAMEWORK_LABELS
from crossgate_claude import FRAMEWORK as CLAUDE
from crossgate_langgraph._calls import AGENT_FRAMEWORK as LANGCHAIN
from crossgate_openai import FRAMEWORK as OPENAI
from crossgate_pydantic_ai import FRAMEWORK as PYDANTIC_AI

PACKAGES = Path(__file__).resolve().parents[2] / "adapters" / "typescript" / "packages"


def typescript_frameworks() -> dict[str, str]:
    """Each TypeScript package's ``FRAMEWORK`` constant, read from its source."""
    found = {}
    for source in sorted(PACKAGES.glob("*/src/capabilities.ts")):
        match = re.search(r"^export const FRAMEWORK = '([^']+)';$", source.read_text(encoding="utf-8"), re.MULTILINE)
        assert match, f"{source} has no FRAMEWORK constant"
        found[source.parts[-3]] = match.group(1)
    return found


def test_every_adapter_reports_a_listed_framework_and_the_list_has_no_other() -> None:
    typescript = typescript_frameworks()
    assert set(typescript) == {"ai-sdk", "mastra", "openai-agents", "claude-agent-sdk", "langgraph", "langchain"}
    python = {OPENAI, CLAUDE, "langgraph", LANGCHAIN, PYDANTIC_AI, AAP}
    assert python | set(typescript.values()) == set(FRAMEWORKS)
    assert len(FRAMEWORKS) == len(set(FRAMEWORKS)) == len(python) + len(typescript), "no two adapters share a name"


def test_the_sdks_in_both_languages_keep_their_typescript_calls_apart() -> None:
    typescript = typescript_frameworks()
    assert typescript["openai-agents"] == f"{OPENAI}-ts"
    assert typescript["claude-agent-sdk"] == f"{CLAUDE}-ts"
    assert typescript["langgraph"] == "langgraph-ts"
    assert typescript["langchain"] == f"{LANGCHAIN}-ts"


def test_context_keys_and_page_labels_cover_every_framework() -> None:
    assert set(CONTEXT_KEYS) == set(FRAMEWORKS)
    assert list(FRAMEWORK_LABELS) == list(FRAMEWORKS)
    assert len(set(FRAMEWORK_LABELS.values())) == len(FRAMEWORKS), "the page tells every framework apart"

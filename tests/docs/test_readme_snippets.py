"""Every python block of README.md and adapters/*/README.md runs, in order, as a reader would paste them.

Each file's blocks run in a fresh folder (holding a copy of ``examples/``, as a checkout does) with one
namespace; a block preceded by ``<!-- not run: reason -->`` is skipped, and must say why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.docs.snippets import run_snippets, snippets

ROOT = Path(__file__).resolve().parents[2]
READMES = [
    pytest.param("README.md", id="README"),
    pytest.param("adapters/openai/README.md", id="openai"),
    pytest.param("adapters/claude/README.md", id="claude", marks=[pytest.mark.slow, pytest.mark.claude_cli]),
    pytest.param("adapters/langgraph/README.md", id="langgraph"),
    pytest.param("adapters/pydantic-ai/README.md", id="pydantic-ai"),
    pytest.param("adapters/agent-framework/README.md", id="agent-framework"),
]


@pytest.mark.parametrize("readme", READMES)
def test_the_readmes_python_blocks_run(readme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = snippets(ROOT / readme)
    assert any(b.skip_reason is None for b in blocks), "at least one block of each README runs"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for name in ("CROSSGATE_DB", "CROSSGATE_POLICY", "CROSSGATE_LANGGRAPH_CHECKPOINTS", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    run_snippets(blocks, {"__name__": "__readme__"})


def test_a_block_runs_unless_marked_and_a_failure_names_the_readme_line(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- not run: needs a key -->\n```python\nraise SystemExit\n```\n\n"
        "```python\nimport asyncio\nawait asyncio.sleep(0)\ny = x + 1\n```\n\n```python\n\n1 / 0\n```\n",
        encoding="utf-8",
    )
    blocks = snippets(readme)
    assert [(b.line, b.skip_reason) for b in blocks] == [(4, None), (9, "needs a key"), (13, None), (19, None)]
    namespace: dict[str, object] = {}
    with pytest.raises(ZeroDivisionError) as error:
        run_snippets(blocks, namespace)
    assert namespace["y"] == 2, "blocks share a namespace; the marked one did not run"
    assert (error.traceback[-1].path, error.traceback[-1].lineno + 1) == (readme, 20)
    assert os.fspath(readme) in str(error.getrepr())

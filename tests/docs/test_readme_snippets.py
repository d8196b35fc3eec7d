"""Every python block of README.md and adapters/*/README.md runs as a script, as a reader saves and runs it.

Each block is written to a file and run with ``python <file>`` in a fresh folder (holding a copy of
``examples/``, as a checkout does), offline; a block preceded by ``<!-- not run: reason -->`` is skipped,
and must say why. Each quick start leaves its store behind: every reviewed call it ran has its outcome
recorded as ``ran``, as ``crossgate show`` prints it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import RequestQuery, RequestStatus, ReviewQueue, open_store
from tests.docs.snippets import Snippet, offline_env, run_snippet, snippets

ROOT = Path(__file__).resolve().parents[2]
CROSSGATE = Path(sys.executable).parent / "crossgate"
READMES = {
    "README.md": (),
    "adapters/openai/README.md": (),
    "adapters/claude/README.md": (pytest.mark.claude_cli,),
    "adapters/langgraph/README.md": (),
    "adapters/pydantic-ai/README.md": (),
    "adapters/agent-framework/README.md": (),
    "adapters/google-adk/README.md": (),
}


def runnable() -> list[object]:
    found: list[object] = []
    for readme, marks in READMES.items():
        blocks = [b for b in snippets(ROOT / readme) if b.skip_reason is None]
        assert blocks, f"{readme}: at least one block of each README runs"
        for block in blocks:
            found.append(pytest.param(block, id=f"{readme}:{block.line}", marks=[pytest.mark.slow, *marks]))
    return found


def applied_requests(folder: Path) -> list[str]:
    queue = ReviewQueue(open_store(str(folder / "crossgate.db")))
    try:
        return [r.id for r in queue.list_requests(RequestQuery(statuses=(RequestStatus.APPLIED,))).items]
    finally:
        queue.close()


def outcome_shown(folder: Path, request_id: str) -> str:
    shown = subprocess.run(
        [str(CROSSGATE), "--db", "crossgate.db", "show", request_id],
        cwd=folder,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    return next(line for line in shown.stdout.splitlines() if line.startswith("outcome"))


@pytest.mark.parametrize("block", runnable())
def test_the_quick_start_runs_as_a_script_and_records_what_ran(block: Snippet, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = run_snippet(block, tmp_path)
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    applied = applied_requests(tmp_path)
    assert applied, f"{block.where}: the quick start reviews a call and runs it"
    for request_id in applied:
        assert outcome_shown(tmp_path, request_id).split()[1] == "ran", f"{block.where}: {request_id}"


@pytest.mark.parametrize("readme", list(READMES))
def test_each_readme_leads_with_a_block_that_runs(readme: str) -> None:
    first = snippets(ROOT / readme)[0]
    assert first.skip_reason is None, f"{first.where}: a newcomer copies the first example; make it one that runs"


def test_a_block_runs_unless_marked_and_a_failure_names_the_readme_line(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "text\n\n```python\nprint('one')\n```\n\n<!-- not run: needs a key -->\n```python\nraise SystemExit(3)\n```\n\n"
        "```python\nimport asyncio\nawait asyncio.sleep(0)\n```\n\n```python\n\n1 / 0\n```\n",
        encoding="utf-8",
    )
    blocks = snippets(readme)
    assert [(b.line, b.skip_reason) for b in blocks] == [(4, None), (9, "needs a key"), (13, None), (18, None)]
    assert run_snippet(blocks[0], tmp_path).stdout == "one\n"
    with pytest.raises(AssertionError, match=r"README.md:13 failed as a script") as top_level_await:
        run_snippet(blocks[2], tmp_path)
    assert "'await' outside function" in str(top_level_await.value)
    with pytest.raises(AssertionError, match=r"README.md:18 failed") as failure:
        run_snippet(blocks[3], tmp_path)
    assert "line 19, in <module>" in str(failure.value) and "ZeroDivisionError" in str(failure.value)


def test_a_snippet_runs_offline(tmp_path: Path) -> None:
    env = offline_env({**os.environ, "OPENAI_API_KEY": "sk-x", "CROSSGATE_DB": "elsewhere.db"})
    assert "OPENAI_API_KEY" not in env and "CROSSGATE_DB" not in env
    block = Snippet(tmp_path / "README.md", 1, "import httpx\nhttpx.get('https://example.com', timeout=5)\n", None)
    with pytest.raises(AssertionError, match=r"ProxyError|ConnectError"):
        run_snippet(block, tmp_path)


def test_the_layout_lists_each_folder_once() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("```", 2)[1]
    folders = [line.split()[0] for line in layout.splitlines() if line and not line.startswith(" ")]
    assert len(folders) == len(set(folders)), folders

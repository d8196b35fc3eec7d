"""adapters/strands/README.md's quick start runs as a script, in Strands' venv (the main venv has no Strands,
so tests/docs/test_readme_snippets.py cannot run it; it uses the same helpers here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("strands")

from tests.docs.snippets import snippets
from tests.docs.test_readme_snippets import ROOT, applied_requests, outcome_shown, run_snippet

README = ROOT / "adapters" / "strands" / "README.md"


@pytest.mark.slow
def test_the_quick_start_runs_as_a_script_and_records_what_ran(tmp_path: Path) -> None:
    [block] = [b for b in snippets(README) if b.skip_reason is None]
    assert snippets(README)[0] == block, "a newcomer copies the first example; make it one that runs"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = run_snippet(block, tmp_path)
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    assert done.stdout.strip() == "Done."
    [applied] = applied_requests(tmp_path)
    assert outcome_shown(tmp_path, applied).split()[1] == "ran"

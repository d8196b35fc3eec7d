"""The LangGraph README's worker recipe works as written: `crossgate worker --app workers:resumers`.

The README's graph example is saved as ``tickets_app.py`` and its recipe as ``workers.py``; a run parks,
``crossgate approve`` decides, and the worker (a subprocess, as a user runs it) resumes the thread with an
``AsyncSqliteSaver`` opened inside its event loop. The approval is signed with the authority's key
(``crossgate keys init``) and the worker pins its public key, as across processes it must.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import ReviewQueue, open_store
from crossgate.model import ParkedRunStatus, RequestStatus
from crossgate.runs import Parked
from tests.docs.snippets import snippets

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "adapters/langgraph/README.md"
CROSSGATE = Path(sys.executable).parent / "crossgate"

pytestmark = pytest.mark.slow


def readme_block(starts_with: str) -> str:
    [block] = [b.code for b in snippets(README) if b.code.lstrip().startswith(starts_with)]
    return block


def crossgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as an operator runs it: the authority's keyring in ``cwd/authority``, its public key pinned."""
    env = {k: v for k, v in os.environ.items() if k not in ("CROSSGATE_DB", "CROSSGATE_POLICY")}
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), env.get("PYTHONPATH", "")])
    env["CROSSGATE_AUTHORITY_DIR"] = str(cwd / "authority")
    if (cwd / "authority.pub").exists():
        env["CROSSGATE_AUTHORITY_PUBKEY_FILE"] = str(cwd / "authority.pub")
    return subprocess.run(
        [str(CROSSGATE), "--db", "crossgate.db", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


async def test_the_documented_worker_recipe_resumes_a_parked_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = readme_block("import asyncio\nfrom typing import TypedDict")
    (tmp_path / "tickets_app.py").write_text(app, encoding="utf-8")
    (tmp_path / "workers.py").write_text(readme_block("# workers.py"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("CROSSGATE_LANGGRAPH_CHECKPOINTS", raising=False)
    import tickets_app

    from crossgate_langgraph import Gate, open_checkpointer

    async with open_checkpointer() as saver:
        graph = tickets_app.build_graph(saver)
        parked = await Gate(tickets_app.queue, graph).run(graph, {"ticket_id": "t3"}, thread="t-42")
    assert isinstance(parked, Parked)
    [request_id] = parked.request_ids

    initialised = crossgate(tmp_path, "keys", "init")
    assert initialised.returncode == 0, initialised.stderr
    pin = crossgate(tmp_path, "keys", "show")
    (tmp_path / "authority.pub").write_text(pin.stdout, encoding="utf-8")
    nothing = crossgate(tmp_path, "worker", "--once", "--app", "workers:resumers")
    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stdout == "", "nothing is decided yet: nothing resumes"

    approved = crossgate(tmp_path, "approve", request_id, "--reviewer", "ann")
    assert approved.returncode == 0, approved.stderr
    worked = crossgate(tmp_path, "worker", "--once", "--app", "workers:resumers")
    assert worked.returncode == 0, worked.stderr
    assert "Traceback" not in worked.stderr and "no running event loop" not in worked.stderr
    assert "Warning" not in worked.stderr, "the decision is signed and its key pinned: no unverified run"
    assert worked.stdout.startswith("finished  langgraph run t-42"), worked.stdout
    assert "deleted WIN A FREE CRUISE" in worked.stdout

    queue = ReviewQueue(open_store("crossgate.db"), tickets_app.policy)
    assert queue.get(request_id).status is RequestStatus.APPLIED
    outcome = queue.outcome(request_id)
    assert outcome is not None and outcome.kind == "ran", "the node's tool ran through gated_call: recorded"
    assert queue.get_parked(parked.parked_run).status is ParkedRunStatus.RESUMED
    queue.close()
    tickets_app.queue.close()
    sys.modules.pop("tickets_app", None)

"""Requests carry the tool's argument schema, so an edit the tool cannot take is refused when it is made.

Against real parked runs (``create_agent`` with crossgate's middleware, and a ``ToolNode`` graph with
``gated_tool_wrapper``) on a SQLite store, decided through the real ``crossgate`` CLI (issue 11, class 7).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, RequestStatus, ReviewQueue, VerdictKind, open_store
from crossgate.runs import Finished, Parked
from tests.adapters.langgraph.driver import DRIVERS
from tests.conformance.harness import TOOL
from tests.conformance.tickets import TicketStore

pytestmark = pytest.mark.slow

POLICY = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool=TOOL),))


async def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("crossgate", path=str(Path(sys.executable).parent))
    assert exe is not None, "the crossgate CLI is not installed in this environment"
    argv = [exe, "--db", db, *args]
    return await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("kind", ["langchain", "langgraph"])
async def test_an_edit_the_tool_cannot_take_is_refused_up_front(tmp_path: Path, kind: str) -> None:
    db = f"sqlite:///{tmp_path / 'crossgate.db'}"
    queue = ReviewQueue(open_store(db), POLICY)
    tickets = TicketStore(tmp_path / "tickets.db")
    tickets.seed()
    driver = DRIVERS[kind](queue, tickets, tmp_path, db)
    try:
        parked = await driver.start(["t3"], run=f"edit-{kind}")
        assert isinstance(parked, Parked)
        [request_id] = parked.request_ids
        schema = queue.get(request_id).args_schema
        assert schema is not None and schema["properties"]["id"]["type"] == "string"
        events = len(queue.events())

        for bad in ('{"id": 5}', '{"id": "t2", "force": true}', "{}"):
            refused = await cli(db, "edit", request_id, "--args", bad, "--reviewer", "ann")
            assert refused.returncode == 5, (bad, refused.stdout, refused.stderr)
            assert "Traceback" not in refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert queue.get(request_id).status is RequestStatus.PENDING, "nothing was saved from a refused edit"
        assert len(queue.events()) == events

        edited = await cli(db, "edit", request_id, "--args", '{"id": "t2"}', "--reviewer", "ann")
        assert edited.returncode == 0, edited.stderr
        done = await driver.resume(parked.parked_run)
        assert isinstance(done, Finished)
        assert tickets.ids() == ["t1", "t3"]
        assert queue.get(request_id).status is RequestStatus.APPLIED
    finally:
        queue.close()

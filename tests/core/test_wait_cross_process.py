"""A decision made by another process wakes a waiter here, through the store (SQLite file)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from crossgate import RequestStatus, ReviewQueue, ToolCall, open_store

DECIDE = """
import sys, time
from crossgate import Reject, ReviewQueue, open_store
time.sleep(0.3)
queue = ReviewQueue(open_store(sys.argv[1]))
queue.decide(sys.argv[2], Reject(message="not today"), reviewer="other-process")
"""


@pytest.mark.slow
async def test_waiter_wakes_on_a_decision_from_another_process(tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    queue = ReviewQueue(open_store(db))
    request = queue.submit(ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "t1"})).request
    assert request is not None
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", DECIDE, db, request.id)
    started = time.monotonic()
    decided = await queue.wait(request.id, timeout=30)
    elapsed = time.monotonic() - started
    assert await asyncio.wait_for(child.wait(), timeout=30) == 0
    assert decided.status is RequestStatus.DECIDED
    assert decided.decision is not None
    assert decided.decision.reviewer == "other-process"
    assert elapsed < 15
    queue.close()

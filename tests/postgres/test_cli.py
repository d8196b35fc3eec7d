"""The ``crossgate`` command on PostgreSQL: ``--db postgresql://…`` or ``$CROSSGATE_DB`` select the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from crossgate import RequestStatus, ReviewQueue
from crossgate.stores.postgres import PostgresStore
from tests.cli.conftest import subprocess_env

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def crossgate(*args: str, db: str | None = None) -> subprocess.CompletedProcess[str]:
    env = subprocess_env()  # an operator's environment: it holds the authority's key, so it may decide
    env.pop("CROSSGATE_DB", None)
    if db is not None:
        env["CROSSGATE_DB"] = db
    command = [sys.executable, "-m", "crossgate.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_submit_decide_and_list_through_the_cli(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    submitted = crossgate(
        "--db",
        pg_store.url,
        "submit",
        "--framework",
        "langgraph",
        "--tool",
        "delete_ticket",
        "--args",
        '{"id": "t1"}',
        "--json",
    )
    assert submitted.returncode == 0, submitted.stderr
    request_id = json.loads(submitted.stdout)["id"]
    approved = crossgate("approve", request_id, "--reviewer", "ann", db=pg_store.url)
    assert approved.returncode == 0, approved.stderr
    assert pg_queue.get(request_id).status is RequestStatus.DECIDED
    again = crossgate("reject", request_id, "--message", "too late", "--reviewer", "bob", db=pg_store.url)
    assert again.returncode == 4 and again.stderr.count("\n") == 1
    listed = json.loads(crossgate("list", "--status", "all", "--json", db=pg_store.url).stdout)
    assert [item["id"] for item in listed["items"]] == [request_id]
    assert crossgate("audit", "verify", db=pg_store.url).returncode == 0


def test_a_dead_server_is_one_line_and_a_failure_exit() -> None:
    result = crossgate("list", db="postgresql://postgres@127.0.0.1:1/test")
    assert result.returncode != 0
    assert result.stderr.startswith("crossgate: error: PostgreSQL could not set up the schema")
    assert "Traceback" not in result.stderr

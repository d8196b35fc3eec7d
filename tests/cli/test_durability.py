"""A ``crossgate`` process SIGKILLed right after it submits or decides loses nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import CROSSGATE, subprocess_env

pytestmark = pytest.mark.slow

# Runs one real CLI command, then SIGKILLs itself the moment the command is done, before the store
# is closed: no clean shutdown, no WAL checkpoint, no interpreter exit handlers.
KILLED_AFTER_COMMAND = """
import os, signal, sys
from crossgate.cli import CliContext, app

class KilledBeforeClose(CliContext):
    def close(self) -> None:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

app(sys.argv[1:], obj=KilledBeforeClose())
"""


def killed_after(db: Path, *argv: str) -> dict[str, Any]:
    child = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_COMMAND, "--db", str(db), *argv, "--json"],
        capture_output=True, text=True, env=subprocess_env(), timeout=60,
    )  # fmt: skip
    assert child.returncode == -9, child.stderr
    assert Path(f"{db}-wal").exists(), "the process was to die before SQLite could checkpoint"
    printed: dict[str, Any] = json.loads(child.stdout)
    return printed


def crossgate(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CROSSGATE), "--db", str(db), *argv], capture_output=True, text=True, env=subprocess_env(), timeout=60
    )


def shown(db: Path, request_id: str) -> dict[str, Any]:
    result = crossgate(db, "show", request_id, "--json")
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def assert_audit_intact(db: Path, events: int) -> None:
    result = crossgate(db, "audit", "verify")
    assert (result.returncode, result.stdout) == (0, f"audit log intact: {events} events verified\n"), result.stderr


def test_a_process_killed_right_after_submit_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    printed = killed_after(
        db, "submit", "--framework", "langgraph", "--tool", "delete_ticket", "--args", '{"id": "t3"}'
    )
    assert printed["status"] == "pending"

    request = {key: value for key, value in printed.items() if not key.startswith("verdict")}
    assert shown(db, printed["id"]) == request
    assert_audit_intact(db, 1)


def test_a_process_killed_right_after_a_decision_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    submitted = crossgate(db, "submit", "--framework", "openai-agents", "--tool", "delete_ticket", "--json")
    rid = json.loads(submitted.stdout)["id"]
    printed = killed_after(db, "reject", rid, "--message", "Do not delete t3.", "--reviewer", "ann")
    assert printed["status"] == "decided"

    after = shown(db, rid)
    assert after["status"] == "decided"
    assert after["decision"] == printed["decision"]
    assert (after["reviewer"], after["decision"]["message"]) == ("ann", "Do not delete t3.")
    again = crossgate(db, "approve", rid)
    assert again.returncode == 4  # the decision that survived still counts: no second one
    assert_audit_intact(db, 2)


def test_a_process_killed_right_after_remembering_keeps_the_standing_rule(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    submitted = crossgate(db, "submit", "--framework", "langgraph", "--tool", "read_file", "--json")
    rid = json.loads(submitted.stdout)["id"]
    printed = killed_after(db, "approve", rid, "--remember", "forever", "--reviewer", "ann")
    rule_id = printed["standing_rule"]["id"]
    rules = json.loads(crossgate(db, "rules", "list", "--json").stdout)["items"]
    assert [r["id"] for r in rules] == [rule_id]
    assert_audit_intact(db, 3)

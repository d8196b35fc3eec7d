"""The installed ``crossgate`` script, run as a real process on a SQLite file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import CROSSGATE, subprocess_env

pytestmark = pytest.mark.slow


def crossgate(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CROSSGATE), *args], cwd=cwd, env=subprocess_env(**env), capture_output=True, text=True, timeout=60
    )


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_request_travels_through_separate_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    submitted = as_json(
        crossgate("--db", db, "submit", "--framework", "langgraph", "--tool", "delete_ticket",
                  "--args", '{"id": "t3"}', "--run", "thread-1", "--json", cwd=tmp_path)
    )  # fmt: skip
    rid = submitted["id"]
    assert [r["id"] for r in as_json(crossgate("--db", db, "list", "--json", cwd=tmp_path))["items"]] == [rid]
    approved = crossgate("--db", db, "approve", rid, "--remember", "run", "--reviewer", "ann", cwd=tmp_path)
    assert approved.returncode == 0 and approved.stdout.startswith(f"approved {rid} (delete_ticket) as ann")
    shown = as_json(crossgate("--db", db, "show", rid, "--json", cwd=tmp_path))
    assert (shown["status"], shown["reviewer"], shown["decision"]["channel"]) == ("decided", "ann", "cli")
    assert len(as_json(crossgate("--db", db, "rules", "list", "--json", cwd=tmp_path))["items"]) == 1
    verified = crossgate("--db", db, "audit", "verify", cwd=tmp_path)
    assert (verified.returncode, verified.stdout) == (0, "audit log intact: 3 events verified\n")


def test_the_database_comes_from_the_option_then_the_environment_then_the_current_folder(tmp_path: Path) -> None:
    submit = ("submit", "--framework", "langgraph", "--tool", "t", "--json")
    from_env, from_option = tmp_path / "env.db", tmp_path / "option.db"
    as_json(crossgate(*submit, cwd=tmp_path))
    as_json(crossgate(*submit, cwd=tmp_path, CROSSGATE_DB=str(from_env)))
    as_json(crossgate("--db", str(from_option), *submit, cwd=tmp_path, CROSSGATE_DB=str(from_env)))
    for db in (tmp_path / "crossgate.db", from_env, from_option):
        assert len(as_json(crossgate("--db", str(db), "list", "--json", cwd=tmp_path))["items"]) == 1, db


def test_errors_are_one_line_without_a_traceback(tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    assert crossgate("--db", db, "init", cwd=tmp_path).returncode == 0  # approve does not create a database
    missing = crossgate("--db", db, "approve", "req_nope", cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (3, "")
    assert missing.stderr == "crossgate: error: no request with id 'req_nope'\n"
    usage = crossgate("--db", db, "list", "--status", "bogus", cwd=tmp_path)
    assert usage.returncode == 2
    assert usage.stderr.count("\n") == 1 and "Traceback" not in usage.stderr
    bad_args = crossgate("--db", db, "submit", "--framework", "f", "--tool", "t", "--args", "{", cwd=tmp_path)
    assert bad_args.returncode == 5
    assert bad_args.stderr.startswith("crossgate: error: --args: arguments are not valid JSON")


def test_audit_verify_exits_1_on_a_tampered_file(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    for ticket in ("t1", "t2"):
        as_json(crossgate("--db", str(db), "submit", "--framework", "f", "--tool", "delete_ticket",
                          "--args", json.dumps({"id": ticket}), "--json", cwd=tmp_path))  # fmt: skip
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET payload = replace(payload, 't2', 't9') WHERE seq = 2")
    result = crossgate("--db", str(db), "audit", "verify", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == "crossgate: audit log tampered: event 2 was changed after it was written\n"


def test_python_dash_m_runs_the_same_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "crossgate.cli", "--db", "memory:", "list"],
        capture_output=True, text=True, env=subprocess_env(), timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "no requests\n")

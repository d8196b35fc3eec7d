"""A SQLite log written by the code before ``rejected``/``answered`` and ``ran``/``not_run`` (migration 7).

The fixture is a dump of a database crossgate 4c1540e wrote (``tests/support/legacy_log.py``): its
requests are migrated, its events are kept as written, so the chain still verifies.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from crossgate import ReviewQueue
from crossgate.stores.sqlite import SqliteStore
from tests.cli.conftest import CROSSGATE, Cli, subprocess_env
from tests.support.legacy_log import IDS, SQLITE_DUMP, check_migrated


def _old_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.executescript(SQLITE_DUMP.read_text(encoding="utf-8"))


def _bodies(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT id, body FROM requests").fetchall())


def _column_statuses(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT id, status FROM requests").fetchall())


def test_the_fixture_is_the_old_schema_with_the_old_names(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (4,)
        kinds = [k for (k,) in db.execute("SELECT kind FROM events ORDER BY seq")]
    assert _column_statuses(path)[IDS["rejected"]] == _column_statuses(path)[IDS["answered"]] == "applied"
    assert kinds.count("executed") == 4


def test_setup_migrates_the_requests_and_keeps_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    old = _bodies(path)
    store = SqliteStore(path)
    store.setup()
    assert store.schema_version() == 8
    assert _column_statuses(path)[IDS["rejected"]] == "rejected"
    assert _column_statuses(path)[IDS["answered"]] == "answered"
    check_migrated(store, old, _bodies(path))
    store.close()


def test_setup_twice_changes_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    SqliteStore(path).setup()
    once = (_bodies(path), _column_statuses(path))
    SqliteStore(path).setup()
    assert (_bodies(path), _column_statuses(path)) == once


def test_the_cli_reads_the_migrated_log_by_the_new_names(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    verified = subprocess.run(
        [str(CROSSGATE), "--db", str(path), "audit", "verify"], capture_output=True, text=True, env=subprocess_env()
    )
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.strip() == "audit log intact: 19 events verified"
    cli = Cli(ReviewQueue(SqliteStore(path)), CliRunner())
    shown = cli.ok("show", IDS["rejected"]).stdout
    assert "status         rejected" in shown
    assert "outcome        not run (2026-11-30 09:00:33): Keep t3: a customer needs it." in shown
    assert cli.json("show", IDS["answered"])["outcome"]["kind"] == "not_run"
    assert cli.json("show", IDS["approved"])["outcome"] == {
        "kind": "ran",
        "at": "2026-11-30T09:00:28+00:00",
        "result": "deleted ticket t3",
        "error": None,
        "seq": 11,
    }
    table = cli.ok("events").stdout
    assert "executed" not in table and table.count(" not_run ") == 2 and table.count(" ran ") == 2
    # An old applied event names no decision; the table takes it from the request's decided event.
    [applied] = [line.split() for line in table.splitlines() if " applied " in line and IDS["rejected"] in line]
    assert applied[3:6] == ["applied", IDS["rejected"], "reject"]
    # JSON keeps each event as stored, so anyone can recompute its hash.
    assert [e["kind"] for e in cli.json("events")["items"]].count("executed") == 4
    listed = cli.json("list", "--status", "rejected")["items"]
    assert [r["id"] for r in listed] == [IDS["rejected"]]

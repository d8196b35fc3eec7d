"""The operator's commands against a local database and against a review server: same output, --json, exit codes.

``expire``, ``runs prune`` and ``policy apply`` take an admin's token on a server (the server signs the
policy); ``policy show|history|diff`` and ``audit verify`` read the server's versions and log and check
their signatures here, with the key this command pins, so a log rewritten in the server's store is caught
as it is locally. ``submit``, ``policy replay`` and ``audit checkpoint`` stay local: with a server chosen
they say so in one line, exit 2, and change nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crossgate import ReviewQueue, ToolCall, open_store
from crossgate.authority import TrustedKeys
from crossgate.model import ParkedRunStatus, RequestStatus
from tests.cli.backends import KEYS, MODES, PIN, SCOPED_TOKEN, Reviewing, Run, normalised, reviewing, server_settings

pytestmark = pytest.mark.slow

FIRST = "default: ask\nrules:\n  - name: reads\n    verdict: allow\n    tool: read_*\n"
SECOND = FIRST + "  - name: deletes\n    verdict: deny\n    tool: delete_*\n    reason: Archive it instead.\n"


@pytest.fixture(params=MODES)
def cli(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Reviewing]:
    monkeypatch.chdir(tmp_path)
    with reviewing(request.param, tmp_path, server_settings(sweep_seconds=3600)) as world:
        yield world


def _past(world: Reviewing, hours: float) -> ReviewQueue:
    """An agent's queue on the same database whose clock is ``hours`` behind."""
    behind = timedelta(hours=hours)
    return ReviewQueue(
        open_store(str(world.db)), clock=lambda: datetime.now(UTC) - behind, trusted=TrustedKeys.from_file(PIN)
    )


def _ended_long_ago(world: Reviewing) -> tuple[str, str]:
    """A run resumed and one failed, both two hours ago; their ids."""
    past = _past(world, 2)
    ids = []
    for status in (ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED):
        submitted = past.submit(ToolCall(framework="langgraph", tool="write_file", args={"path": status.value}))
        assert submitted.request is not None
        parked = past.park(
            framework="langgraph", run=f"run-{status.value}", request_ids=[submitted.request.id], state="s" * 300
        )
        past.claim_parked(parked.id, owner="w")
        past.finish_parked(parked.id, owner="w", status=status, outcome=status.value)
        ids.append(parked.id)
    past.close()
    return ids[0], ids[1]


def _overdue(world: Reviewing) -> str:
    past = _past(world, 1)
    call = ToolCall(framework="langgraph", tool="close_ticket", args={"id": "t9"})
    submitted = past.submit(call, timeout_seconds=60)
    past.close()
    assert submitted.request is not None
    return submitted.request.id


def _session(cli: Reviewing) -> list[tuple[str, Run]]:
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    Path("second.yaml").write_text(SECOND, encoding="utf-8")
    lines = [
        "policy history",
        "policy show",
        "policy show --json",
        "policy apply first.yaml",
        "policy apply first.yaml",
        "policy apply first.yaml --json",
        "policy apply second.yaml --json",
        "policy history",
        "policy history --json",
        "policy show",
        "policy show 1 --json",
        "policy show 9",
        "policy diff",
        "policy diff 1 2 --json",
        "policy diff 1 first.yaml",
    ]
    runs = [(line, cli(*line.split())) for line in lines]
    overdue = _overdue(cli)
    cli.submit("close_ticket", {"id": "t1"})  # not overdue: expire leaves it pending
    for line in ("expire", "expire --json"):
        runs.append((line, cli(*line.split())))
    runs.append(("show overdue", cli("show", overdue)))
    _ended_long_ago(cli)
    for line in (
        "runs prune --older-than 1h --dry-run",
        "runs prune --older-than 3h --json",
        "runs prune --older-than 1h --include-failed --dry-run --json",
        "runs prune --older-than 1h",
        "runs prune --older-than 1h --include-failed --json",
        "runs prune --older-than 1h --include-failed",
        "runs list",
    ):
        runs.append((line, cli(*line.split())))
    request_id = cli.submit("update_ticket")
    runs.append(("approve", cli("approve", request_id)))
    for line in ("audit verify", "audit verify --json", f"audit verify --authority {PIN}"):
        runs.append((line, cli(*line.split())))
    runs.append(("audit verify --authority --json", cli("audit", "verify", "--authority", str(PIN), "--json")))
    return runs


def test_an_operators_session_prints_the_same_on_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcripts = {}
    for mode in MODES:
        (tmp_path / mode).mkdir()
        monkeypatch.chdir(tmp_path / mode)
        with reviewing(mode, tmp_path / mode, server_settings(sweep_seconds=3600)) as world:
            runs = _session(world)
        text = "\n".join(f"$ {line}\nexit {r.exit_code}\n{r.stdout}--- stderr\n{r.stderr}" for line, r in runs)
        transcripts[mode] = normalised(text.replace(str(PIN), "<pin>")).splitlines()
    assert transcripts["server"] == transcripts["local"]
    text = "\n".join(transcripts["local"])
    for expected in (
        "applied policy version 1",
        "policy unchanged: version 1",
        "\"version\": 2,",
        "+- name: deletes",
        "signature valid",
        "1 request expired",
        "pruned the SDK state of 1 parked run",
        "audit log intact",
        "signed checkpoint(s)",
        "exit 3",
    ):
        assert expected in text, expected


def test_policy_apply_signs_and_records_the_admin(cli: Reviewing) -> None:
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    applied = cli.ok("policy", "apply", "first.yaml", "--json").json()
    assert (applied["version"], applied["unchanged"], applied["source"]) == (1, False, "first.yaml")
    assert applied["signature"]["status"] == "valid"
    stored = cli.agent.store.get_policy_version()
    assert stored is not None and stored.created_by == applied["created_by"]
    [event] = [e for e in cli.agent.events() if e.kind == "policy_applied"]
    assert event.actor == applied["created_by"]
    assert '"read_*"' in stored.document


def test_a_bad_policy_file_is_one_line_and_stores_nothing(cli: Reviewing) -> None:
    Path("bad.yaml").write_text("rules:\n  - verdict: sometimes\n", encoding="utf-8")
    run = cli("policy", "apply", "bad.yaml")
    assert run.exit_code != 0 and run.stderr.count("\n") == 1 and run.stderr.startswith("crossgate: error: ")
    assert cli.agent.store.list_policy_versions() == []


def test_a_log_rewritten_in_the_store_is_caught_on_both(cli: Reviewing) -> None:
    request_id = cli.submit()
    cli.ok("approve", request_id)
    assert cli.ok("audit", "verify", "--authority", str(PIN)).stdout.startswith("audit log intact")
    with sqlite3.connect(cli.db) as db:  # an agent with the store edits its own submission
        db.execute("UPDATE events SET payload = replace(payload, 't1', 't2') WHERE seq = 1")
    for args in (("audit", "verify"), ("audit", "verify", "--authority", str(PIN))):
        run = cli(*args)
        assert run.exit_code == 1, run
        assert "audit log tampered" in run.stderr and "event 1" in run.stderr


def test_the_newest_policy_version_deleted_is_caught_on_both(cli: Reviewing) -> None:
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    Path("second.yaml").write_text(SECOND, encoding="utf-8")
    cli.ok("policy", "apply", "first.yaml")
    cli.ok("policy", "apply", "second.yaml")
    with sqlite3.connect(cli.db) as db:  # a rollback: the store is put back to version 1
        db.execute("DELETE FROM policy_versions WHERE version = 2")
    run = cli("audit", "verify", "--authority", str(PIN), "--json")
    assert run.exit_code == 1
    assert "policy version 2" in run.json()["problem"] and "rollback" in run.json()["problem"]


def test_expire_closes_only_overdue_requests(cli: Reviewing) -> None:
    overdue = _overdue(cli)
    waiting = cli.submit()
    expired = cli.ok("expire", "--json").json()
    assert [r["id"] for r in expired["items"]] == [overdue]
    assert cli.agent.get(overdue).status is RequestStatus.EXPIRED
    assert cli.agent.get(waiting).status is RequestStatus.PENDING


def test_prune_keeps_what_a_failed_run_needs_unless_told(cli: Reviewing) -> None:
    resumed, failed = _ended_long_ago(cli)
    pruned = cli.ok("runs", "prune", "--older-than", "1h", "--json").json()
    assert ([r["id"] for r in pruned["runs"]], pruned["state_bytes"]) == ([resumed], 300)
    assert cli.agent.get_parked(resumed).state == ""
    assert cli.agent.get_parked(failed).state == "s" * 300
    [event] = [e for e in cli.agent.events() if e.kind == "parked_states_pruned"]
    assert event.payload["parked_runs"] == [resumed]


def test_a_reviewer_who_is_no_admin_cannot_run_upkeep_on_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    with reviewing("server", tmp_path, server_settings(sweep_seconds=3600)) as world:
        overdue = _overdue(world)
        _ended_long_ago(world)
        before = world.stored()
        lee = {"CROSSGATE_TOKEN": SCOPED_TOKEN, "CROSSGATE_SERVER": world.url}
        for args in (
            ("expire",),
            ("runs", "prune", "--older-than", "1h"),
            ("policy", "apply", "first.yaml"),
        ):
            run = world(*args, **lee)
            assert run.exit_code == 5, (args, run)
            assert run.stderr.count("\n") == 1 and "lee is not an admin" in run.stderr
        assert world.stored() == before
        assert world.agent.get(overdue).status is RequestStatus.PENDING
        assert world.agent.store.list_policy_versions() == []
        # reading needs no admin: lee sees what the operator sees
        assert world("policy", "history", **lee).stdout == world("policy", "history").stdout


def test_who_acts_is_the_tokens_reviewer_on_a_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    with reviewing("server", tmp_path) as world:
        for args, option in ((("policy", "apply", "first.yaml", "--by", "eve"), "--by"),
                             (("runs", "prune", "--older-than", "1h", "--reviewer", "eve"), "--reviewer")):  # fmt: skip
            run = world(*args)
            assert run.exit_code == 2 and f"leave {option} out with --server" in run.stderr, run
        assert world.agent.store.list_policy_versions() == []


@pytest.mark.parametrize(
    "args",
    [
        ("submit", "--framework", "langgraph", "--tool", "delete_ticket"),
        ("policy", "replay", "first.yaml"),
        ("audit", "checkpoint"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_commands_that_stay_local_say_so_when_a_server_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("first.yaml").write_text(FIRST, encoding="utf-8")
    with reviewing("server", tmp_path) as world:
        world.submit()
        before = world.stored()
        assert world.url is not None
        for env in ({}, {"CROSSGATE_SERVER": world.url}):
            run = world(*args, **env)
            assert run.exit_code == 2, run
            assert run.stderr.count("\n") == 1 and "works on a local database only" in run.stderr
            assert world.url in run.stderr and run.stdout == ""
            assert world.stored() == before
        assert not (tmp_path / "absent.db").exists()
        # --db wins over the login: the command runs locally (checkpoint signs with the operator's key)
        local = world("--db", str(world.db), *args, CROSSGATE_AUTHORITY_DIR=str(KEYS))
        assert local.exit_code == 0, local

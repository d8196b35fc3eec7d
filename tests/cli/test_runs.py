"""``crossgate runs``: list and show parked runs, retry a failed one, prune old states; bad input changes nothing."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from crossgate import Approve, ParkedRunStatus, Reject, ReviewQueue, ToolCall
from crossgate.stores.sqlite import SqliteStore
from tests.cli.conftest import CROSSGATE, Cli, subprocess_env
from tests.support.clock import FakeClock


def parked(cli: Cli, queue: ReviewQueue, run: str = "thread-1") -> str:
    request_id = str(cli.submit("delete_ticket", '{"id": "t3"}', "--run", run)["id"])
    return queue.park(framework="langgraph", run=run, request_ids=[request_id], state='{"secret": "sdk"}').id


def failed(cli: Cli, queue: ReviewQueue, run: str = "thread-1") -> str:
    return finished(cli, queue, run, ParkedRunStatus.FAILED)


def resumed(cli: Cli, queue: ReviewQueue, run: str = "thread-1") -> str:
    return finished(cli, queue, run, ParkedRunStatus.RESUMED)


def finished(cli: Cli, queue: ReviewQueue, run: str, status: ParkedRunStatus) -> str:
    park_id = parked(cli, queue, run)
    queue.decide(queue.get_parked(park_id).request_ids[0], Approve(), reviewer="ann")
    queue.claim_parked(park_id, owner="worker-1")
    outcome = "TimeoutError: model" if status is ParkedRunStatus.FAILED else "done"
    queue.finish_parked(park_id, owner="worker-1", status=status, outcome=outcome)
    return park_id


def state(queue: ReviewQueue) -> tuple[Any, ...]:
    return tuple(queue.parked_runs(statuses=tuple(ParkedRunStatus))), queue.store.audit_head()


def test_list_and_show_never_print_the_sdk_state(cli: Cli, queue: ReviewQueue) -> None:
    first, second = parked(cli, queue, "thread-1"), failed(cli, queue)
    listed = cli.json("runs", "list")["items"]
    assert [(r["id"], r["status"]) for r in listed] == [(first, "parked"), (second, "failed")]
    assert all("state" not in r for r in listed)
    assert [r["id"] for r in cli.json("runs", "list", "--status", "failed")["items"]] == [second]
    table = cli.ok("runs", "list").stdout
    assert second in table and "TimeoutError: model" in table and "secret" not in table
    shown = cli.json("runs", "show", second)
    assert shown["outcome"] == "TimeoutError: model" and "state" not in shown
    assert [r["status"] for r in shown["requests"]] == ["decided"]
    assert "secret" not in cli.ok("runs", "show", second).stdout


def test_retry_offers_a_failed_run_to_resumers_again(cli: Cli, queue: ReviewQueue) -> None:
    park_id = failed(cli, queue)
    assert queue.ready_runs() == []
    retried = cli.json("runs", "retry", park_id, "--reviewer", "ops")
    assert (retried["status"], retried["outcome"], retried["attempts"]) == ("parked", None, 1)
    assert [p.id for p in queue.ready_runs()] == [park_id]
    event = queue.events()[-1]
    assert (event.kind, event.actor, event.payload["failed_with"]) == ("run_retried", "ops", "TimeoutError: model")
    assert queue.verify_audit().ok


@pytest.mark.parametrize(
    ("make", "code", "says"),
    [
        (lambda cli, queue: "park_ghost", 3, "no parked run with id 'park_ghost'"),
        (parked, 4, "is parked; only a failed run can be retried"),
    ],
    ids=["unknown", "not-failed"],
)
def test_retry_refuses_what_it_cannot_retry_and_changes_nothing(
    cli: Cli, queue: ReviewQueue, make: Any, code: int, says: str
) -> None:
    park_id = make(cli, queue)
    before = state(queue)
    result = cli("runs", "retry", park_id)
    assert result.exit_code == code
    assert result.stdout == "" and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert state(queue) == before


def test_show_of_an_unknown_run_exits_3(cli: Cli) -> None:
    result = cli("runs", "show", "park_ghost")
    assert result.exit_code == 3 and "no parked run with id 'park_ghost'" in result.stderr


STATE = '{"secret": "sdk"}'


@pytest.mark.parametrize(("duration", "seconds"), [("30m", 1800), ("12h", 43200), ("7d", 604800)])
def test_prune_takes_minutes_hours_and_days(
    cli: Cli, queue: ReviewQueue, clock: FakeClock, duration: str, seconds: int
) -> None:
    park_id = resumed(cli, queue)
    clock.advance(seconds)  # ended exactly that long ago: not older than it yet
    assert cli.json("runs", "prune", "--older-than", duration)["count"] == 0
    assert queue.get_parked(park_id).state == STATE
    clock.advance(1)
    report = cli.json("runs", "prune", "--older-than", duration)
    assert (report["count"], [r["id"] for r in report["runs"]]) == (1, [park_id])
    assert queue.get_parked(park_id).state == ""


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("7", "expected minutes, hours or days such as 30m, 12h or 7d, got '7'"),
        ("7w", "got '7w'"),
        ("1.5h", "got '1.5h'"),
        ("-1d", "got '-1d'"),
        ("7 d", "got '7 d'"),
        ("D", "got 'D'"),
        ("", "got ''"),
        ("0d", "must be more than zero, got '0d'"),
        ("0m", "must be more than zero, got '0m'"),
        ("99999999999d", "'99999999999d' is longer than a date can reach"),
    ],
)
def test_prune_refuses_a_bad_duration_with_exit_2_and_changes_nothing(
    cli: Cli, queue: ReviewQueue, clock: FakeClock, value: str, says: str
) -> None:
    resumed(cli, queue)
    failed(cli, queue, "thread-2")
    clock.advance(30 * 86400)
    before = state(queue)
    result = cli("runs", "prune", "--older-than", value, "--include-failed")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert "Invalid value for '--older-than'" in result.stderr and says in result.stderr
    assert state(queue) == before


def test_prune_without_older_than_is_a_usage_error(cli: Cli, queue: ReviewQueue, clock: FakeClock) -> None:
    resumed(cli, queue)
    clock.advance(30 * 86400)
    before = state(queue)
    result = cli("runs", "prune", "--include-failed")
    assert result.exit_code == 2 and "Missing option '--older-than'" in result.stderr
    assert state(queue) == before


def test_a_dry_run_shows_what_would_be_pruned_and_changes_nothing(
    cli: Cli, queue: ReviewQueue, clock: FakeClock
) -> None:
    first, second = resumed(cli, queue, "thread-1"), failed(cli, queue, "thread-2")
    parked(cli, queue, "thread-3")
    clock.advance(8 * 86400)
    before = state(queue)
    report = cli.json("runs", "prune", "--older-than", "7d", "--include-failed", "--dry-run")
    assert (report["dry_run"], report["count"], report["state_bytes"]) == (True, 2, 2 * len(STATE))
    assert [(r["id"], r["status"]) for r in report["runs"]] == [(first, "resumed"), (second, "failed")]
    text = cli.ok("runs", "prune", "--older-than", "7d", "--dry-run").stdout
    assert first in text and second not in text and "secret" not in text
    assert f"would prune the SDK state of 1 parked run, freeing {len(STATE)} B (dry run: nothing changed)" in text
    assert state(queue) == before


def test_prune_json_and_text_report_the_runs_and_the_state_freed(
    cli: Cli, queue: ReviewQueue, clock: FakeClock
) -> None:
    old, old_failed = resumed(cli, queue, "thread-1"), failed(cli, queue, "thread-2")
    clock.advance(2 * 86400)
    recent, waiting = resumed(cli, queue, "thread-3"), parked(cli, queue, "thread-4")
    clock.advance(3600)
    report = cli.json("runs", "prune", "--older-than", "1d", "--reviewer", "ops")
    assert report == {
        "dry_run": False,
        "older_than_seconds": 86400,
        "count": 1,
        "state_bytes": len(STATE),
        "runs": [
            {
                "id": old,
                "framework": "langgraph",
                "run": "thread-1",
                "status": "resumed",
                "updated_at": queue.get_parked(old).updated_at.isoformat(),
                "state_bytes": len(STATE),
            }
        ],
    }
    event = queue.events()[-1]
    assert (event.kind, event.actor, event.payload["parked_runs"]) == ("parked_states_pruned", "ops", [old])
    assert [queue.get_parked(p).state for p in (old_failed, recent, waiting)] == [STATE] * 3
    out = cli.ok("runs", "prune", "--older-than", "30m", "--include-failed").stdout
    assert out == f"pruned the SDK state of 2 parked runs, {2 * len(STATE)} B freed\n"
    assert [queue.get_parked(p).state for p in (old_failed, recent, waiting)] == ["", "", STATE]
    assert cli.ok("runs", "prune", "--older-than", "30m", "--include-failed").stdout == (
        "no parked run has state to prune\n"
    )
    assert queue.verify_audit().ok


def test_show_says_a_pruned_state_is_pruned(cli: Cli, queue: ReviewQueue, clock: FakeClock) -> None:
    kept, pruned = resumed(cli, queue, "thread-1"), resumed(cli, queue, "thread-2")
    clock.advance(86400)
    queue.prune_parked_states(older_than=timedelta(hours=1))  # both
    kept = parked(cli, queue, "thread-3")
    shown = cli.ok("runs", "show", pruned).stdout
    assert "state      pruned" in shown
    assert f"state      {len(STATE)} B" in cli.ok("runs", "show", kept).stdout
    assert (cli.json("runs", "show", pruned)["state_pruned"], cli.json("runs", "show", kept)["state_pruned"]) == (
        True,
        False,
    )
    assert cli.json("runs", "show", kept)["state_bytes"] == len(STATE)


def test_retry_of_a_failed_run_whose_state_was_pruned_exits_4_and_changes_nothing(
    cli: Cli, queue: ReviewQueue, clock: FakeClock
) -> None:
    park_id = failed(cli, queue)
    clock.advance(86400)
    cli.ok("runs", "prune", "--older-than", "12h", "--include-failed")
    before = state(queue)
    result = cli("runs", "retry", park_id, "--reviewer", "ops")
    assert result.exit_code == 4 and result.stdout == ""
    assert f"parked run {park_id} failed, and its SDK state was pruned; it cannot be resumed again" in result.stderr
    assert state(queue) == before


def test_prune_through_the_installed_command_on_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "crossgate.db"
    clock = FakeClock(datetime.now(UTC) - timedelta(days=3))
    queue = ReviewQueue(SqliteStore(db), clock=clock)
    queue.store.setup()
    ids = []
    for n in range(2):
        request = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": n}, run=f"r{n}"))
        assert request.request is not None
        park = queue.park(framework="langgraph", run=f"r{n}", request_ids=[request.request.id], state="s" * 2048)
        queue.decide(request.request.id, Approve(), reviewer="ann")
        queue.claim_parked(park.id, owner="w")
        queue.finish_parked(park.id, owner="w", status=ParkedRunStatus.RESUMED, outcome="done")
        ids.append(park.id)
        clock.advance(2 * 86400)  # the second run ends a day ago
    queue.close()

    def crossgate(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(CROSSGATE), "--db", str(db), "runs", *args]
        return subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=60, check=False)

    dry = crossgate("prune", "--older-than", "2d", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert [r["id"] for r in json.loads(dry.stdout)["runs"]] == [ids[0]]
    done = crossgate("prune", "--older-than", "2d")
    assert (done.returncode, done.stdout) == (0, "pruned the SDK state of 1 parked run, 2.0 KiB freed\n")
    assert "state      pruned" in crossgate("show", ids[0]).stdout
    assert "state      2.0 KiB" in crossgate("show", ids[1]).stdout
    bad = crossgate("prune", "--older-than", "2 days")
    assert bad.returncode == 2 and "Invalid value for '--older-than'" in bad.stderr
    reopened = SqliteStore(db)
    assert [p.state for p in reopened.list_parked_runs()] == ["", "s" * 2048]
    reopened.close()


def killed_between_mark_and_tool(queue: ReviewQueue) -> tuple[str, list[str]]:
    """A parked run of three calls: one ran and recorded its outcome, one was marked applied and then the
    process died (no outcome), one was rejected and applied without an outcome (a rejection never runs)."""
    calls = [ToolCall(framework="langgraph", tool="delete_ticket", args={"id": t}, run="thread-9") for t in "abc"]
    ids = []
    for call in calls:
        request = queue.submit(call).request
        assert request is not None
        ids.append(request.id)
    park_id = queue.park(framework="langgraph", run="thread-9", request_ids=ids, state=STATE).id
    queue.decide(ids[0], Approve(), reviewer="ann")
    queue.decide(ids[1], Approve(), reviewer="ann")
    queue.decide(ids[2], Reject(message="keep c"), reviewer="ann")
    queue.claim_parked(park_id, owner="worker-1")
    queue.mark_applied(ids[0], args={"id": "a"})
    queue.record_outcome(ids[0], ran=True, result="deleted a")
    queue.mark_applied(ids[1], args={"id": "b"})  # SIGKILL here: the tool may or may not have run
    queue.mark_applied(ids[2])
    return park_id, ids


def test_show_lists_calls_applied_with_no_outcome_recorded(cli: Cli, queue: ReviewQueue) -> None:
    park_id, (ran, unknown, rejected) = killed_between_mark_and_tool(queue)
    applied_at = queue.get(unknown).applied_at
    assert applied_at is not None
    text = cli.ok("runs", "show", park_id).stdout
    stamp = applied_at.strftime("%Y-%m-%d %H:%M:%S")
    expected = f"{unknown} (delete_ticket): applied at {stamp}, no outcome recorded: may or may not have run"
    assert [line for line in text.splitlines() if "no outcome" in line] == [expected]
    shown = cli.json("runs", "show", park_id)
    assert shown["applied_without_outcome"] == [unknown]
    assert [(r["id"], r["status"], r["outcome_recorded"]) for r in shown["requests"]] == [
        (ran, "applied", True),
        (unknown, "applied", False),
        (rejected, "rejected", None),  # a rejection never runs the tool: no outcome to miss
    ]
    assert shown["requests"][1]["applied_at"] == applied_at.isoformat()


def test_show_says_nothing_of_outcomes_once_every_applied_call_recorded_one(cli: Cli, queue: ReviewQueue) -> None:
    park_id, (_, unknown, _) = killed_between_mark_and_tool(queue)
    queue.record_outcome(unknown, ran=True, result="deleted b")  # the operator's check, or a late record
    assert "no outcome" not in cli.ok("runs", "show", park_id).stdout
    assert cli.json("runs", "show", park_id)["applied_without_outcome"] == []


def test_show_on_a_sqlite_file_lists_the_unrecorded_call(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = SqliteStore(db)
    store.setup()
    queue = ReviewQueue(store)
    park_id, (_, unknown, _) = killed_between_mark_and_tool(queue)
    queue.close()
    result = subprocess.run(
        [str(CROSSGATE), "--db", str(db), "runs", "show", park_id, "--json"],
        capture_output=True, text=True, env=subprocess_env(), timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout)["applied_without_outcome"] == [unknown]


def test_a_later_resume_refusing_to_run_the_call_again_is_not_its_outcome(cli: Cli, queue: ReviewQueue) -> None:
    park_id, (_, unknown, _) = killed_between_mark_and_tool(queue)
    # What every adapter records when a retried resume meets the applied call: it did not run it again.
    queue.record_outcome(unknown, ran=False, error=f"not run again: request {unknown} was applied before")
    assert cli.json("runs", "show", park_id)["applied_without_outcome"] == [unknown]
    assert f"{unknown} (delete_ticket): applied at" in cli.ok("runs", "show", park_id).stdout


def node_run(queue: ReviewQueue, clock: FakeClock, *, taken_over: bool) -> tuple[str, str]:
    """A run whose node runs the tool itself after its approval (no outcome is recorded for it), resumed
    once cleanly, or taken over from a resumer that died after marking the call applied."""
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "n1"}, run="thread-n")
    request = queue.submit(call).request
    assert request is not None
    park_id = queue.park(framework="langgraph", run="thread-n", request_ids=[request.id], state=STATE).id
    queue.decide(request.id, Approve(), reviewer="ann")
    queue.claim_parked(park_id, owner="worker-1", lease_seconds=5)
    queue.mark_applied(request.id, args={"id": "n1"})  # the node runs the tool; nothing records its outcome
    owner = "worker-1"
    if taken_over:  # worker-1 died here; its lease runs out and worker-2 finishes the run
        clock.advance(10)
        queue.claim_parked(park_id, owner="worker-2")
        owner = "worker-2"
    queue.finish_parked(park_id, owner=owner, outcome="finished")
    return park_id, request.id


def test_a_run_resumed_cleanly_in_one_attempt_lists_no_unrecorded_calls(
    cli: Cli, queue: ReviewQueue, clock: FakeClock
) -> None:
    park_id, _ = node_run(queue, clock, taken_over=False)
    assert cli.json("runs", "show", park_id)["applied_without_outcome"] == []
    assert "no outcome" not in cli.ok("runs", "show", park_id).stdout


def test_a_run_taken_over_from_a_dead_resumer_lists_the_call_it_applied(
    cli: Cli, queue: ReviewQueue, clock: FakeClock
) -> None:
    park_id, request_id = node_run(queue, clock, taken_over=True)
    shown = cli.json("runs", "show", park_id)
    assert (shown["status"], shown["attempts"], shown["applied_without_outcome"]) == ("resumed", 2, [request_id])

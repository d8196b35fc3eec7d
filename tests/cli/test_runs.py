"""``crossgate runs``: list and show parked runs, retry a failed one; bad input changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from crossgate import Approve, ParkedRunStatus, ReviewQueue
from tests.cli.conftest import Cli


def parked(cli: Cli, queue: ReviewQueue, run: str = "thread-1") -> str:
    request_id = str(cli.submit("delete_ticket", '{"id": "t3"}', "--run", run)["id"])
    return queue.park(framework="langgraph", run=run, request_ids=[request_id], state='{"secret": "sdk"}').id


def failed(cli: Cli, queue: ReviewQueue) -> str:
    park_id = parked(cli, queue)
    queue.decide(queue.get_parked(park_id).request_ids[0], Approve(), reviewer="ann")
    queue.claim_parked(park_id, owner="worker-1")
    queue.finish_parked(park_id, owner="worker-1", status=ParkedRunStatus.FAILED, outcome="TimeoutError: model")
    return park_id


def state(queue: ReviewQueue) -> tuple[Any, ...]:
    return tuple(queue.parked_runs(statuses=tuple(ParkedRunStatus))), queue.store.audit_head()


def test_list_and_show_never_print_the_sdk_state(cli: Cli, queue: ReviewQueue) -> None:
    first, second = parked(cli, queue, "thread-1"), failed(cli, queue)
    listed = cli.json("runs", "list")
    assert [(r["id"], r["status"]) for r in listed] == [(first, "parked"), (second, "failed")]
    assert all("state" not in r for r in listed)
    assert [r["id"] for r in cli.json("runs", "list", "--status", "failed")] == [second]
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

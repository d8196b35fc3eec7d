"""``crossgate approve ID ID ...`` and ``reject ID ID ... --message``: each id decided on its own."""

from __future__ import annotations

import json
from collections.abc import Callable

from crossgate import ReviewQueue
from tests.cli.conftest import Cli

NOT_FOUND, CONFLICT, INVALID, USAGE = 3, 4, 5, 2

SINGLE_JSON_KEYS = {
    "id", "status", "framework", "tool", "args", "fingerprint", "decision", "reviewer", "resolution", "agent", "run",
    "session", "call_id", "reason", "rule", "description", "allowed_decisions", "args_schema", "requested_by",
    "created_at", "expires_at", "apply_within_seconds", "approvals_required", "decided_at", "applied_at",
    "closed_reason", "standing_rule", "remember_covers",
}  # fmt: skip
"""What ``approve ID --json`` printed before several ids were accepted; scripts read these."""


def pending(cli: Cli, n: int) -> list[str]:
    return [str(cli.submit("delete_ticket", f'{{"id": "t{i}"}}')["id"]) for i in range(n)]


def decided_actors(cli: Cli, rid: str) -> list[tuple[str, str]]:
    return [(e["actor"], e["channel"]) for e in cli.json("events", "--request", rid)["items"] if e["kind"] == "decided"]


def test_a_failing_id_in_the_middle_leaves_the_others_decided(cli: Cli) -> None:
    first, last = pending(cli, 2)
    result = cli("approve", first, "req_nope", last, "--reviewer", "ann", "--note", "bulk")
    assert result.exit_code == NOT_FOUND
    assert result.stdout.splitlines() == [
        f"approved {first} (delete_ticket) as ann",
        f"approved {last} (delete_ticket) as ann",
    ]
    assert result.stderr.splitlines() == ["crossgate: error: req_nope: no request with id 'req_nope'"]
    for rid in (first, last):
        shown = cli.json("show", rid)
        assert (shown["status"], shown["reviewer"], shown["decision"]["note"]) == ("decided", "ann", "bulk")
        assert decided_actors(cli, rid) == [("ann", "cli")]


def test_the_exit_code_is_the_first_failures(cli: Cli, submit_call: Callable[..., str]) -> None:
    done, mine, fresh = pending(cli, 3)
    cli.ok("approve", done, "--reviewer", "bob")
    own = submit_call(requested_by="ann")
    result = cli("approve", fresh, done, "req_nope", own, mine, "--reviewer", "ann")
    assert result.exit_code == CONFLICT  # the already decided one comes before the unknown one
    lines = result.stderr.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"crossgate: error: {done}: request {done} was already decided (approve)")
    assert lines[1] == "crossgate: error: req_nope: no request with id 'req_nope'"
    assert lines[2] == f"crossgate: error: {own}: ann submitted request {own} and cannot decide it"
    assert [line.split()[1] for line in result.stdout.splitlines()] == [fresh, mine]
    assert cli.json("show", own)["status"] == "pending"
    assert decided_actors(cli, done) == [("bob", "cli")]
    invalid_first = cli("approve", pending(cli, 1)[0], own, done, "--reviewer", "ann")
    assert invalid_first.exit_code == INVALID


def test_json_is_a_list_of_per_item_results(cli: Cli) -> None:
    first, last = pending(cli, 2)
    result = cli("reject", first, "req_nope", last, "--message", "Keep these tickets.", "--reviewer", "ann", "--json")
    assert result.exit_code == NOT_FOUND
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert [(r["request_id"], r["ok"]) for r in out] == [(first, True), ("req_nope", False), (last, True)]
    assert out[1]["error"] == {
        "exit_code": NOT_FOUND,
        "type": "NotFoundError",
        "message": "no request with id 'req_nope'",
    }
    for item in (out[0], out[2]):
        request = item["request"]
        assert request.keys() == SINGLE_JSON_KEYS
        assert (request["status"], request["decision"]["kind"]) == ("decided", "reject")
        assert request["decision"]["message"] == "Keep these tickets."
    assert cli.json("show", last)["resolution"]["message"] == "Keep these tickets."


def test_all_decided_exits_0_and_remember_applies_to_each(cli: Cli, queue: ReviewQueue) -> None:
    ids = [str(cli.submit("delete_ticket", f'{{"id": "t{i}"}}', "--run", f"r{i}")["id"]) for i in range(3)]
    out = cli.json("approve", *ids, "--remember", "run", "--reviewer", "ann")
    assert [r["ok"] for r in out] == [True, True, True]
    rules = {r["source_request"]: r for r in cli.json("rules", "list")["items"]}
    assert set(rules) == set(ids)
    assert [rules[rid]["run"] for rid in ids] == ["r0", "r1", "r2"]
    assert all(item["request"]["standing_rule"]["id"] == rules[item["request_id"]]["id"] for item in out)
    assert queue.pending() == []


def test_a_repeated_id_is_decided_once(cli: Cli) -> None:
    (rid,) = pending(cli, 1)
    result = cli("approve", rid, rid, "--reviewer", "ann")
    assert result.exit_code == CONFLICT
    assert result.stdout == f"approved {rid} (delete_ticket) as ann\n"
    assert decided_actors(cli, rid) == [("ann", "cli")]


def test_a_single_id_prints_what_it_always_printed(cli: Cli) -> None:
    approved, rejected = pending(cli, 2)
    assert cli.ok("approve", approved, "--reviewer", "ann").stdout == f"approved {approved} (delete_ticket) as ann\n"
    out = cli.json("reject", rejected, "--message", "no", "--reviewer", "ann")
    assert isinstance(out, dict) and out.keys() == SINGLE_JSON_KEYS
    assert (out["id"], out["decision"]["message"]) == (rejected, "no")
    for argv in (["approve", "req_nope"], ["approve", "req_nope", "--json"], ["reject", "req_nope", "--message", "no"]):
        missing = cli(*argv)
        assert missing.exit_code == NOT_FOUND
        error = {"exit_code": NOT_FOUND, "type": "NotFoundError", "message": "no request with id 'req_nope'"}
        assert (json.loads(missing.stdout) if "--json" in argv else missing.stdout) == (
            {"error": error} if "--json" in argv else ""
        )
        assert missing.stderr == "crossgate: error: no request with id 'req_nope'\n"


def test_command_level_errors_still_decide_nothing(cli: Cli) -> None:
    ids = pending(cli, 2)
    before = cli.snapshot()
    blank = cli("reject", *ids, "--message", "  ")
    assert (blank.exit_code, blank.stdout) == (INVALID, "")
    assert "a rejection needs a message" in blank.stderr
    usage = cli("approve", *ids, "--pattern", "id=t*")
    assert usage.exit_code == USAGE
    for command in (["edit", *ids, "--args", "{}"], ["respond", *ids, "--content", "x"]):
        single_only = cli(*command)
        assert single_only.exit_code == USAGE
        assert "unexpected extra argument" in single_only.stderr
    assert cli.snapshot() == before

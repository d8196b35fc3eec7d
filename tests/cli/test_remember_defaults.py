"""Remember defaults to the narrowest match, these exact arguments, and says what it covers before and after."""

from __future__ import annotations

import re

from tests.cli.conftest import Cli


def _submit(cli: Cli, ticket: str, run: str) -> dict[str, object]:
    return cli.submit("delete_ticket", f'{{"id": "{ticket}"}}', "--run", run)


def test_approving_t3_forever_does_not_let_t2_run_unasked_in_a_new_run(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    cli.ok("approve", str(first["id"]), "--remember", "forever", "--reviewer", "ann")
    later = _submit(cli, "t2", "run-2")  # a new run, another ticket: nobody approved this one
    assert later["status"] == "pending" and later["verdict"] == "ask", later
    again = _submit(cli, "t3", "run-3")  # exactly what was approved
    assert again["verdict"] == "allow", again


def test_the_success_line_says_what_the_rule_covers(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    result = cli.ok("approve", str(first["id"]), "--remember", "forever", "--reviewer", "ann")
    assert re.search(
        r'^remembered as standing rule rule_\w+: allow delete_ticket with exactly \{"id": "t3"\}, forever$',
        result.stdout,
        re.MULTILINE,
    ), result.stdout


def test_the_whole_tool_is_remembered_only_when_asked_for(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    result = cli.ok("approve", str(first["id"]), "--remember", "forever", "--match", "tool")
    assert "allow every call of delete_ticket, whatever its arguments, forever" in result.stdout
    later = _submit(cli, "t2", "run-2")
    assert later["verdict"] == "allow", later


def test_a_remembered_rejection_covers_only_these_arguments_too(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    cli.ok("reject", str(first["id"]), "--message", "Not this one.", "--remember", "run")
    assert _submit(cli, "t3", "run-1")["verdict"] == "deny"
    assert _submit(cli, "t2", "run-1")["status"] == "pending"


def test_a_pattern_and_an_edit_say_what_they_cover(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    result = cli.ok("approve", str(first["id"]), "--remember", "run", "--pattern", "id=t*")
    assert 'allow delete_ticket where id matches "t*", for the rest of run run-1' in result.stdout
    second = _submit(cli, "x9", "run-1")
    edited = cli.ok("edit", str(second["id"]), "--args", '{"id": "x8"}', "--remember", "forever")
    assert 'allow delete_ticket with exactly {"id": "x8"}, forever' in edited.stdout


def test_the_json_answer_says_what_the_rule_covers(cli: Cli) -> None:
    first = _submit(cli, "t3", "run-1")
    decided = cli.json("approve", str(first["id"]), "--remember", "forever")
    assert decided["standing_rule"]["match"] == "exact"
    assert decided["remember_covers"] == 'delete_ticket with exactly {"id": "t3"}, forever'

"""The CLI's contract against a local database and against a review server: the same output, --json and exit codes.

``test_a_reviewers_session_prints_the_same_on_both`` runs one session of every reading and deciding
command, error rows included, on each and compares the two transcripts line by line (ids, hashes and
times named by order of appearance). The parametrised tests check the rows themselves on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.cli import CliContext, app
from crossgate.cli.context import os_user
from crossgate.model import RequestStatus
from crossgate.server.app import create_app
from tests.cli.backends import MODES, TOKEN, Reviewing, Run, normalised, reviewing, server_settings
from tests.server.live import live_server

TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


@pytest.fixture(params=MODES)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Reviewing]:
    with reviewing(request.param, tmp_path) as world:
        yield world


def _session(cli: Reviewing) -> list[tuple[str, Run]]:
    """Every reading and deciding command, as a reviewer would type them; what each printed."""
    first = cli.submit("delete_ticket", {"id": "t1"}, agent="support")
    second = cli.submit("close_ticket", {"id": "t2"})
    own = cli.submit("delete_ticket", {"id": "t3"}, requested_by=os_user())
    typed = cli.submit("update_ticket", {"id": "t4"}, args_schema=TICKET_SCHEMA)
    parked_request = cli.submit("read_file", {"path": "a.txt"}, run="run-1")
    parked = cli.park(parked_request, failed=True)
    session = [
        "list",
        "list --json",
        "list --status all --oldest-first --limit 2",
        f"show {first[:14]}",
        f"show {first} --json",
        f"approve {first} --remember forever --match tool",
        f"approve {first}",
        f"approve {first} --json",
        "show req_nope",
        "show req_nope --json",
        f'edit {typed} --args {{"id":5}}',
        f"approve {own}",
        f"approve {own} --json",
        f"approve {second} req_nope --json",
        f"cancel {typed} --reason stop",
        f"cancel {typed}",
        "rules list",
        "rules list --json",
        "rules add --tool read_* --effect allow --json",
        "runs list",
        "runs list --json",
        f"runs show {parked}",
        f"runs show {parked} --json",
        f"runs retry {parked} --json",
        f"runs retry {parked}",
        "runs show park_nope",
        f"show {second}",
        "events",
        f"events --request {first} --json",
        "events --request req_nope",
        "events --after 2 --limit 3 --json",
        "list --status all --json",
    ]
    runs = [(line, cli(*line.split())) for line in session]
    rule = cli.agent.rules()[0].id
    for line in (f"rules show {rule}", f"rules show {rule} --json", f"rules revoke {rule}", f"rules revoke {rule}"):
        runs.append((line, cli(*line.split())))
    applied = cli.agent.mark_applied(first, args={"id": "t1"})
    cli.agent.record_outcome(applied, ran=True, result="deleted")
    runs.append(("show first, applied", cli("show", first)))
    runs.append(("show first, applied --json", cli("show", first, "--json")))
    runs.append(("review", cli("review", input="a\ns\n")))
    runs.append(("rules list --all", cli("rules", "list", "--all")))
    return runs


def _transcript(runs: list[tuple[str, Run]]) -> list[str]:
    return normalised(
        "\n".join(f"$ {line}\nexit {r.exit_code}\n{r.stdout}--- stderr\n{r.stderr}" for line, r in runs)
    ).splitlines()


@pytest.mark.slow
def test_a_reviewers_session_prints_the_same_on_both(tmp_path: Path) -> None:
    transcripts = {}
    for mode in MODES:
        with reviewing(mode, tmp_path / mode) as world:
            transcripts[mode] = _transcript(_session(world))
    assert transcripts["server"] == transcripts["local"]
    text = "\n".join(transcripts["local"])
    # the session did what it says: an approval, its rule, refusals with their codes, a retried run
    for expected in ("exit 3", "exit 4", "exit 5", "remembered as standing rule", "revoked standing rule", "ran ("):
        assert expected in text


def _one_line(run: Run, code: int, says: str) -> None:
    assert run.exit_code == code, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("crossgate: error: "), run.stderr
    assert says in run.stderr


@pytest.mark.slow
def test_not_found_is_exit_3_and_one_line(cli: Reviewing) -> None:
    for command in (["show", "req_nope"], ["approve", "req_nope"], ["cancel", "req_nope"], ["runs", "show", "x"]):
        _one_line(cli(*command), 3, "no ")
    error = cli("show", "req_nope", "--json")
    assert error.json() == {
        "error": {"exit_code": 3, "type": "NotFoundError", "message": "no request with id 'req_nope'"}
    }


@pytest.mark.slow
def test_a_second_decision_is_exit_4_and_changes_nothing(cli: Reviewing) -> None:
    request_id = cli.submit()
    cli.ok("reject", request_id, "--message", "Use the archive instead.")
    before = cli.stored()
    _one_line(cli("approve", request_id), 4, f"request {request_id} was already decided")
    assert cli("approve", request_id, "--json").json()["error"]["type"] == "AlreadyDecidedError"
    assert cli.stored() == before


@pytest.mark.slow
def test_an_invalid_decision_is_exit_5_and_changes_nothing(cli: Reviewing) -> None:
    typed = cli.submit("update_ticket", {"id": "t4"}, args_schema=TICKET_SCHEMA)
    own = cli.submit(requested_by=os_user())
    before = cli.stored()
    _one_line(cli("edit", typed, "--args", '{"id": 5}'), 5, "schema")
    _one_line(cli("approve", own), 5, "cannot decide")
    assert cli("approve", own, "--json").json()["error"]["type"] == "SelfDecisionError"
    assert cli.stored() == before
    assert cli.agent.get(typed).status is RequestStatus.PENDING


@pytest.mark.slow
def test_a_decision_is_recorded_as_the_reviewer_through_the_cli_channel(cli: Reviewing) -> None:
    request_id = cli.submit()
    decided = cli.ok("approve", request_id, "--json").json()
    assert (decided["reviewer"], decided["decision"]["channel"]) == (os_user(), "cli")
    [event] = [e for e in cli.agent.events(request_id=request_id) if e.kind == "decided"]
    assert (event.actor, event.channel) == (os_user(), "cli")


@pytest.mark.slow
def test_a_policy_rule_that_keeps_asking_is_noted_on_both(tmp_path: Path) -> None:
    strict = PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_ticket", rememberable=False)
    queue = ReviewQueue(open_store(str(tmp_path / "c.db")), Policy(rules=(strict,)), authority=Authority.generate())
    env: dict[str, str | None] = {"XDG_CONFIG_HOME": str(tmp_path), "CROSSGATE_TOKEN": TOKEN, "CROSSGATE_DB": None}
    said = {}
    for mode in MODES:
        submitted = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": mode}))
        assert submitted.request is not None
        argv = ["approve", submitted.request.id, "--remember", "forever", "--match", "tool"]
        if mode == "local":
            said[mode] = CliRunner().invoke(app, argv, obj=CliContext(queue=queue), env=env).stdout
        else:
            with live_server(create_app(queue, server_settings())) as url:
                said[mode] = CliRunner().invoke(app, [*argv, "--server", url], env=env).stdout
    assert normalised(said["server"]) == normalised(said["local"])
    assert said["server"].splitlines()[-1] == "note: the policy still asks for calls like this one (rule deletes)"
    queue.close()


@pytest.mark.slow
def test_the_whole_log_is_read_past_the_servers_page(cli: Reviewing, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("crossgate.cli.server_backend.EVENTS_PAGE", 2)
    for ticket in ("t1", "t2", "t3", "t4", "t5"):
        cli.submit(args={"id": ticket})
    assert [e["seq"] for e in cli.ok("events", "--json").json()["items"]] == [1, 2, 3, 4, 5]
    page = cli.ok("events", "--after", "1", "--limit", "3", "--json").json()
    assert ([e["seq"] for e in page["items"]], page["next_cursor"]) == ([2, 3, 4], "4")

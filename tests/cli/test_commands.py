"""Every command through typer's CliRunner, against a queue on a MemoryStore."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgate import MemoryStore, Policy, PolicyRule, RequestExpiredError, ReviewQueue, VerdictKind, fingerprint
from crossgate.authority import Authority
from crossgate.cli import app
from crossgate.cli.context import os_user
from crossgate.model import CANCEL_MESSAGE, EXPIRY_MESSAGE
from tests.cli.conftest import Cli, FakeClock, clean_env

REQUIRED_KEYS = {"id", "status", "framework", "tool", "args", "fingerprint", "decision", "reviewer"}


def test_submit_prints_the_new_pending_request(cli: Cli) -> None:
    out = cli.submit("delete_ticket", '{"id": "t3"}', "--agent", "triage", "--run", "r1", "--session", "s1")
    assert out.keys() >= REQUIRED_KEYS
    assert out["status"] == "pending"
    assert out["verdict"] == "ask"
    assert out["args"] == {"id": "t3"}
    assert out["fingerprint"] == fingerprint("delete_ticket", {"id": "t3"})
    assert (out["agent"], out["run"], out["session"]) == ("triage", "r1", "s1")
    assert out["decision"] is None and out["reviewer"] is None
    assert cli.queue.get(out["id"]).call.args == {"id": "t3"}


def test_submit_human_output_is_a_key_value_block(cli: Cli) -> None:
    text = cli.ok("submit", "--framework", "langgraph", "--tool", "delete_ticket", "--args", '{"ids": [1, 2]}').stdout
    request = cli.queue.pending()[0]
    assert f"id           {request.id}" in text
    assert "status       pending" in text
    assert 'args         {"ids": [1, 2]}' in text  # brackets survive: no rich markup in values


@pytest.fixture
def policy_cli() -> Cli:
    policy = Policy(
        rules=(
            PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),
            PolicyRule(name="no-drops", verdict=VerdictKind.DENY, tool="drop_*", reason="Never drop tables."),
        )
    )
    return Cli(ReviewQueue(MemoryStore(), policy, authority=Authority.generate()), CliRunner())


def test_submit_prints_the_policy_allow_without_a_request(policy_cli: Cli) -> None:
    out = policy_cli.submit("read_file", '{"path": "a.txt"}')
    assert out["verdict"] == "allow" and out["verdict_rule"] == "reads"
    assert out["id"] is None and out["status"] is None
    assert out.keys() >= REQUIRED_KEYS
    assert out["fingerprint"] == fingerprint("read_file", {"path": "a.txt"})
    assert policy_cli.json("list", "--status", "all")["items"] == []
    assert [e["kind"] for e in policy_cli.json("events")["items"]] == ["auto_allowed"]


def test_submit_prints_the_policy_deny_with_its_reason(policy_cli: Cli) -> None:
    result = policy_cli("submit", "--framework", "langgraph", "--tool", "drop_table", "--args", "{}")
    assert result.exit_code == 6, "a denied call is not accepted (exit codes: README)"
    assert result.stdout.strip() == "denied by policy (rule no-drops): Never drop tables."
    assert [e["kind"] for e in policy_cli.json("events")["items"]] == ["auto_denied"]


def test_list_filters_by_status_framework_tool_agent_and_run(cli: Cli) -> None:
    a = cli.submit("delete_ticket", '{"id": "t1"}', "--agent", "triage", "--run", "r1")["id"]
    b = cli.json("submit", "--framework", "openai-agents", "--tool", "close_ticket", "--args", '{"id": "t2"}')["id"]
    c = cli.submit("delete_ticket", '{"id": "t3"}', "--run", "r2")["id"]
    cli.ok("approve", c, "--reviewer", "ann")

    def ids(*args: str) -> list[str]:
        return [r["id"] for r in cli.json("list", *args)["items"]]

    assert ids() == [b, a]  # pending by default, newest first
    assert ids("--status", "decided") == [c]
    assert ids("--status", "all") == [c, b, a]
    assert ids("--status", "all", "--oldest-first") == [a, b, c]
    assert ids("--framework", "openai-agents") == [b]
    assert ids("--status", "all", "--tool", "delete_ticket") == [c, a]
    assert ids("--agent", "triage") == [a]
    assert ids("--status", "all", "--run", "r2") == [c]
    assert ids("--status", "expired") == []


def test_list_pages_through_everything_with_the_cursor(cli: Cli) -> None:
    submitted = [cli.submit("delete_ticket", f'{{"id": "t{i}"}}')["id"] for i in range(7)]
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        page = cli.json("list", "--limit", "3", "--oldest-first", *cursor)
        seen += [r["id"] for r in page["items"]]
        if page["next_cursor"] is None:
            break
        cursor = ["--cursor", page["next_cursor"]]
    assert seen == submitted


def test_list_human_output_is_a_table_with_a_next_cursor(cli: Cli) -> None:
    ids = [cli.submit("delete_ticket", f'{{"id": "t{i}"}}')["id"] for i in range(3)]
    lines = cli.ok("list", "--limit", "2").stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "TOOL", "ARGS", "FRAMEWORK", "CREATED"]
    assert lines[1].startswith(ids[2]) and lines[2].startswith(ids[1])
    assert lines[3].startswith("more: --cursor ")
    assert cli.ok("list", "--status", "expired").stdout.strip() == "no requests"


def test_show_prints_one_request(cli: Cli) -> None:
    rid = cli.submit()["id"]
    shown = cli.json("show", rid)
    assert shown["id"] == rid and shown["status"] == "pending"
    assert shown.keys() >= REQUIRED_KEYS
    text = cli.ok("show", rid).stdout
    assert f"fingerprint  {shown['fingerprint']}" in text


def test_approve_records_reviewer_channel_and_note(cli: Cli) -> None:
    rid = cli.submit()["id"]
    out = cli.json("approve", rid, "--reviewer", "ann", "--note", "spam ticket")
    assert out["status"] == "decided"
    assert out["reviewer"] == "ann"
    assert out["decision"]["kind"] == "approve"
    assert out["decision"]["channel"] == "cli"
    assert out["decision"]["note"] == "spam ticket"
    assert out["decision"]["fingerprint"] == out["fingerprint"]
    assert out["standing_rule"] is None
    decided = [e for e in cli.json("events", "--request", rid)["items"] if e["kind"] == "decided"]
    assert [(e["actor"], e["channel"]) for e in decided] == [("ann", "cli")]


def test_the_reviewer_defaults_to_the_os_user(cli: Cli) -> None:
    rid = cli.submit()["id"]
    text = cli.ok("approve", rid).stdout
    assert text.strip() == f"approved {rid} (delete_ticket) as {os_user()}"
    assert cli.json("show", rid)["reviewer"] == os_user()


def test_approve_with_the_matching_fingerprint_is_accepted(cli: Cli) -> None:
    out = cli.submit()
    assert cli.json("approve", out["id"], "--fingerprint", out["fingerprint"])["status"] == "decided"


def test_approve_remember_run_allows_later_calls_in_that_run_only(cli: Cli) -> None:
    rid = cli.submit("delete_ticket", '{"id": "t3"}', "--run", "r1")["id"]
    out = cli.json("approve", rid, "--remember", "run", "--match", "tool", "--reviewer", "ann")
    rule = out["standing_rule"]
    assert (rule["effect"], rule["tool"], rule["scope"], rule["run"]) == ("allow", "delete_ticket", "run", "r1")
    assert rule["source_request"] == rid and rule["created_by"] == "ann"
    assert cli.submit("delete_ticket", '{"id": "t9"}', "--run", "r1")["verdict"] == "allow"
    assert cli.submit("delete_ticket", '{"id": "t9"}', "--run", "r2")["verdict"] == "ask"


def test_approve_remember_with_an_argument_pattern(cli: Cli) -> None:
    rid = cli.submit("read_file", '{"path": "docs/a.md"}')["id"]
    rule = cli.json("approve", rid, "--remember", "forever", "--pattern", "path=docs/*")["standing_rule"]
    assert (rule["match"], rule["arg_patterns"]) == ("pattern", {"path": "docs/*"})
    assert cli.submit("read_file", '{"path": "docs/b.md"}')["verdict"] == "allow"
    assert cli.submit("read_file", '{"path": "etc/passwd"}')["verdict"] == "ask"


def test_approve_remember_exact_arguments_for_this_agent(cli: Cli) -> None:
    rid = cli.submit("delete_ticket", '{"id": "t3"}', "--agent", "triage", "--session", "s1")["id"]
    rule = cli.json(
        "approve", rid, "--remember", "session", "--match", "exact", "--this-agent-only", "--reviewer", "ann"
    )["standing_rule"]
    assert (rule["match"], rule["agent"], rule["session"]) == ("exact", "triage", "s1")
    same = ("--agent", "triage", "--session", "s1")
    assert cli.submit("delete_ticket", '{"id": "t3"}', *same)["verdict"] == "allow"
    assert cli.submit("delete_ticket", '{"id": "t4"}', *same)["verdict"] == "ask"
    assert cli.submit("delete_ticket", '{"id": "t3"}', "--agent", "other", "--session", "s1")["verdict"] == "ask"


def test_edit_records_the_new_arguments_and_the_diff(cli: Cli) -> None:
    rid = cli.submit("delete_ticket", '{"id": "t3"}')["id"]
    out = cli.json("edit", rid, "--args", '{"id": "t3", "soft": true}', "--reviewer", "ann")
    assert out["decision"]["kind"] == "edit"
    assert out["decision"]["args"] == {"id": "t3", "soft": True}
    assert out["args"] == {"id": "t3"}  # the proposal stays as it was
    assert cli.queue.get(rid).approved_args() == {"id": "t3", "soft": True}
    decided = next(e for e in cli.json("events", "--request", rid)["items"] if e["kind"] == "decided")
    assert decided["payload"]["diff"]["added"] == {"soft": True}


def test_reject_gives_the_model_the_message(cli: Cli) -> None:
    rid = cli.submit()["id"]
    message = "t3 is a customer's open ticket; do not delete it."
    out = cli.json("reject", rid, "--message", message, "--reviewer", "ann")
    assert out["decision"]["kind"] == "reject"
    assert out["resolution"]["message"] == message
    assert cli.queue.get(rid).approved_args() is None


def test_reject_with_remember_stores_a_deny_rule(cli: Cli) -> None:
    rid = cli.submit("drop_table", '{"name": "users"}')["id"]
    rule = cli.json("reject", rid, "--message", "Never drop tables.", "--remember", "forever", "--match", "tool")[
        "standing_rule"
    ]
    assert (rule["effect"], rule["message"]) == ("deny", "Never drop tables.")
    again = cli.submit("drop_table", '{"name": "orders"}')
    assert (again["verdict"], again["verdict_reason"]) == ("deny", "Never drop tables.")


def test_respond_answers_as_the_tool(cli: Cli) -> None:
    rid = cli.submit("ask_user", '{"question": "Which ticket?"}')["id"]
    out = cli.json("respond", rid, "--content", "t3", "--reviewer", "ann")
    assert (out["decision"]["kind"], out["decision"]["content"]) == ("respond", "t3")
    text = cli.ok("show", rid).stdout
    assert "decision     respond: t3" in text


def test_decision_commands_print_one_line(cli: Cli) -> None:
    ids = [cli.submit("delete_ticket", f'{{"id": "t{i}"}}')["id"] for i in range(4)]
    assert cli.ok("approve", ids[0], "--reviewer", "ann").stdout == f"approved {ids[0]} (delete_ticket) as ann\n"
    assert cli.ok("edit", ids[1], "--args", "{}", "--reviewer", "ann").stdout.startswith(f"edited {ids[1]} ")
    assert cli.ok("reject", ids[2], "--message", "no", "--reviewer", "ann").stdout.startswith(f"rejected {ids[2]} ")
    assert cli.ok("respond", ids[3], "--content", "x", "--reviewer", "ann").stdout.startswith("responded to ")


def test_cancel_closes_the_request_with_a_rejection(cli: Cli) -> None:
    rid = cli.submit()["id"]
    out = cli.json("cancel", rid, "--reviewer", "ann")
    assert out["status"] == "cancelled"
    assert out["resolution"] == {"kind": "reject", "message": CANCEL_MESSAGE, "fingerprint": out["fingerprint"]}
    cancelled = [e for e in cli.json("events", "--request", rid)["items"] if e["kind"] == "cancelled"]
    assert [(e["actor"], e["payload"]["reason"]) for e in cancelled] == [("ann", CANCEL_MESSAGE)]
    assert cli.ok("cancel", cli.submit()["id"]).stdout.startswith("cancelled req_")


def test_expire_closes_only_overdue_requests(cli: Cli, clock: FakeClock) -> None:
    old = cli.submit("delete_ticket", '{"id": "t1"}')["id"]
    clock.advance(1800)
    young = cli.submit("delete_ticket", '{"id": "t2"}')["id"]
    clock.advance(1801)
    expired = cli.json("expire")["items"]
    assert [r["id"] for r in expired] == [old]
    assert expired[0]["resolution"]["message"] == EXPIRY_MESSAGE
    assert cli.json("show", young)["status"] == "pending"
    assert cli.ok("expire").stdout.strip() == "0 requests expired"


def test_rules_add_list_and_revoke(cli: Cli) -> None:
    rule = cli.json("rules", "add", "--tool", "read_*", "--effect", "allow", "--reviewer", "ann")
    assert (rule["tool"], rule["effect"], rule["scope"], rule["created_by"]) == ("read_*", "allow", "forever", "ann")
    assert cli.submit("read_file", '{"path": "a"}')["verdict"] == "allow"
    assert [r["id"] for r in cli.json("rules", "list")["items"]] == [rule["id"]]
    listed = cli.ok("rules", "list").stdout
    assert rule["id"] in listed and "active" in listed

    revoked = cli.json("rules", "revoke", rule["id"], "--reviewer", "ann")
    assert revoked["revoked_by"] == "ann"
    assert cli.json("rules", "list")["items"] == []
    assert [r["id"] for r in cli.json("rules", "list", "--all")["items"]] == [rule["id"]]
    assert cli.submit("read_file", '{"path": "a"}')["verdict"] == "ask"
    kinds = [(e["kind"], e["channel"]) for e in cli.json("events")["items"] if e["kind"].startswith("rule_")]
    assert kinds == [("rule_added", "cli"), ("rule_revoked", "cli")]


def test_rules_add_deny_with_a_pattern_and_a_message(cli: Cli) -> None:
    cli.json(
        "rules", "add", "--tool", "bash", "--effect", "deny", "--pattern", "command=rm -rf *", "--message", "No rm -rf."
    )
    denied = cli.submit("bash", '{"command": "rm -rf /"}')
    assert (denied["verdict"], denied["verdict_reason"]) == ("deny", "No rm -rf.")
    assert cli.submit("bash", '{"command": "ls"}')["verdict"] == "ask"


def test_rules_add_exact_arguments_for_a_run(cli: Cli) -> None:
    rule = cli.json(
        "rules", "add", "--tool", "delete_ticket", "--effect", "allow", "--match", "exact",
        "--args", '{"id": "t3"}', "--scope", "run", "--run", "r1",
    )  # fmt: skip
    assert rule["args_fingerprint"] == fingerprint("delete_ticket", {"id": "t3"})
    assert cli.submit("delete_ticket", '{"id": "t3"}', "--run", "r1")["verdict"] == "allow"
    assert cli.submit("delete_ticket", '{"id": "t3"}', "--run", "r2")["verdict"] == "ask"
    assert cli.submit("delete_ticket", '{"id": "t4"}', "--run", "r1")["verdict"] == "ask"


def test_events_lists_the_log_or_one_request(cli: Cli) -> None:
    first = cli.submit()["id"]
    second = cli.submit("delete_ticket", '{"id": "t4"}')["id"]
    cli.ok("approve", first, "--reviewer", "ann")
    everything = cli.json("events")["items"]
    assert [(e["seq"], e["kind"]) for e in everything] == [(1, "submitted"), (2, "submitted"), (3, "decided")]
    assert [e["kind"] for e in cli.json("events", "--request", second)["items"]] == ["submitted"]
    assert [e["seq"] for e in cli.json("events", "--after", "1", "--limit", "1")["items"]] == [2]
    table = cli.ok("events").stdout.splitlines()
    assert table[0].split() == ["SEQ", "AT", "KIND", "REQUEST", "DECISION", "ACTOR", "CHANNEL"]
    assert len(table) == 4
    assert table[3].split()[3:6] == ["decided", first, "approve"]


def test_audit_verify_passes_on_a_clean_log(cli: Cli) -> None:
    cli.ok("approve", cli.submit()["id"], "--reviewer", "ann")
    assert cli.ok("audit", "verify").stdout.strip() == "audit log intact: 2 events verified"
    assert cli.json("audit", "verify") == {"ok": True, "checked": 2, "problem": None, "bad_seq": None}


def test_audit_verify_exits_1_with_the_problem_when_an_event_was_changed(cli: Cli) -> None:
    cli.ok("approve", cli.submit()["id"], "--reviewer", "ann")
    store = cli.queue.store
    assert isinstance(store, MemoryStore)
    events = store._events
    events[1] = events[1].model_copy(update={"actor": "mallory"})
    result = cli("audit", "verify")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "crossgate: audit log tampered: event 2 was changed after it was written\n"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["--help"],
        ["submit", "--help"],
        ["list", "--help"],
        ["show", "--help"],
        ["approve", "--help"],
        ["edit", "--help"],
        ["reject", "--help"],
        ["respond", "--help"],
        ["cancel", "--help"],
        ["expire", "--help"],
        ["events", "--help"],
        ["rules", "--help"],
        ["rules", "add", "--help"],
        ["audit", "verify", "--help"],
    ],
)
def test_help_exits_0_without_opening_a_database(command: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    db = tmp_path_factory.mktemp("help") / "never.db"
    result = CliRunner().invoke(app, ["--db", str(db), *command], env=clean_env())
    assert result.exit_code == 0, result.stderr
    assert "Usage: crossgate" in result.stdout
    assert not db.exists()


POLICY = """
version: 1
rules:
  - name: no-drops
    verdict: deny
    tool: execute_sql
    where:
      - arg: query
        regex: '(?i)drop table'
    reason: Dropping tables is not allowed; tell the user a DBA must do it.
"""


@pytest.mark.parametrize("via", ["option", "environment"])
def test_the_policy_comes_from_the_option_or_the_environment(tmp_path: Path, via: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = clean_env() | ({"CROSSGATE_POLICY": str(policy)} if via == "environment" else {})
    options = ["--policy", str(policy)] if via == "option" else []
    submit = ["submit", "--framework", "langgraph", "--tool", "execute_sql", "--args", '{"query": "DROP TABLE t"}']
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "q.db"), *options, *submit], env=env)
    assert result.exit_code == 6, result.stderr  # denied
    assert result.stdout == (
        "denied by policy (rule no-drops): Dropping tables is not allowed; tell the user a DBA must do it.\n"
    )


def test_hidden_characters_reach_the_reviewer_escaped(cli: Cli) -> None:
    # A model-chosen tool name or argument must not move the cursor, recolour or reverse what is shown.
    rid = cli.submit("delete_ticket\x1b[2K", '{"id": "t3\\u202e"}')["id"]
    cli.ok("reject", rid, "--message", "no\x1b]0;owned\x07", "--reviewer", "ann")
    for text in (cli.ok("show", rid).stdout, cli.ok("list", "--status", "all").stdout, cli.ok("events").stdout):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    shown = cli.ok("show", rid).stdout
    assert "tool         delete_ticket\\x1b[2K\n" in shown
    assert 'args         {"id": "t3\\u202e"}\n' in shown
    assert "decision     reject: no\\x1b]0;owned\\x07\n" in shown
    assert cli.json("show", rid)["args"] == {"id": "t3\u202e"}  # JSON keeps the exact value


def test_remembering_under_a_rule_that_keeps_asking_says_so() -> None:
    strict = PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_ticket", rememberable=False)
    cli = Cli(ReviewQueue(MemoryStore(), Policy(rules=(strict,)), authority=Authority.generate()), CliRunner())
    rid = cli.submit()["id"]
    lines = cli.ok("approve", rid, "--remember", "forever", "--reviewer", "ann").stdout.splitlines()
    assert lines[-1] == "note: the policy still asks for calls like this one (rule deletes)"
    assert cli.submit()["verdict"] == "ask"

    other = cli.submit("read_file", '{"path": "a"}')["id"]
    lines = cli.ok("approve", other, "--remember", "forever", "--reviewer", "ann").stdout.splitlines()
    assert len(lines) == 2 and lines[1].startswith("remembered as standing rule rule_")


def test_show_says_how_long_an_approval_stays_good_and_why_it_lapsed(clock: FakeClock) -> None:
    queue = ReviewQueue(
        MemoryStore(), Policy(default_apply_within_seconds=900), clock=clock, authority=Authority.generate()
    )
    cli = Cli(queue, CliRunner())
    rid = cli.submit()["id"]
    assert cli.json("show", rid)["apply_within_seconds"] == 900
    assert "apply within  900s of the approval, or it lapses" in cli.ok("show", rid).stdout
    cli.ok("approve", rid, "--reviewer", "ann")
    clock.advance(901)
    with pytest.raises(RequestExpiredError):
        queue.mark_applied(rid, args=queue.get(rid).call.args)
    shown = cli.json("show", rid)
    assert shown["status"] == "expired" and shown["reviewer"] == "ann"
    assert "approval lapsed" in shown["closed_reason"]
    queue.close()


def test_show_says_who_approved_a_request_that_needs_two(clock: FakeClock) -> None:
    two = PolicyRule(name="two", verdict=VerdictKind.ASK, tool="delete_*", approvals=2, apply_within_seconds="never")
    queue = ReviewQueue(MemoryStore(), Policy(rules=(two,)), clock=clock, authority=Authority.generate())
    cli = Cli(queue, CliRunner())
    rid = cli.submit()["id"]
    assert cli.json("show", rid)["approvers"] == [] and cli.json("show", rid)["approvals_required"] == 2
    approved = cli.json("approve", rid, "--reviewer", "ann")
    assert approved["status"] == "pending", "one approval of two decides nothing"
    assert "approvals    1 of 2 (ann)" in cli.ok("show", rid).stdout
    again = cli("approve", rid, "--reviewer", "ann")
    assert again.exit_code == 4 and "ann approved request" in again.stderr
    assert cli.json("approve", rid, "--reviewer", "bob")["status"] == "decided"
    assert cli.json("show", rid)["approvers"] == ["ann", "bob"]
    queue.close()


def test_a_blank_cancel_reason_is_refused_and_the_request_stays_pending(cli: Cli) -> None:
    rid = cli.submit()["id"]
    result = cli("cancel", rid, "--reason", "   ")
    assert result.exit_code == 5 and "a cancellation needs a reason" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert cli.json("show", rid)["status"] == "pending"

"""Every bad input: the exact exit code, one line on stderr, nothing on stdout, and the store unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgate import DecisionKind, ReviewQueue
from crossgate.cli import app
from tests.cli.conftest import Cli, FakeClock, clean_env

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
WRONG_FINGERPRINT = "0" * 64

Setup = Callable[[str], str]


@pytest.fixture
def setup(cli: Cli, queue: ReviewQueue, clock: FakeClock, submit_call: Callable[..., str]) -> Setup:
    """Build the state a case needs and return the id it acts on."""

    def pending() -> str:
        return str(cli.submit()["id"])

    def decided() -> str:
        rid = pending()
        cli.ok("approve", rid, "--reviewer", "ann")
        return rid

    def applied() -> str:
        rid = decided()
        queue.mark_applied(rid, args={"id": "t3"})
        return rid

    def overdue() -> str:
        rid = pending()
        clock.advance(3601)
        return rid

    def expired() -> str:
        rid = overdue()
        assert [r.id for r in queue.expire_overdue()] == [rid]
        return rid

    def cancelled() -> str:
        rid = pending()
        queue.cancel(rid)
        return rid

    def rule() -> str:
        return str(cli.json("rules", "add", "--tool", "read_*", "--effect", "allow")["id"])

    def revoked_rule() -> str:
        rid = rule()
        cli.ok("rules", "revoke", rid)
        return rid

    builders: dict[str, Callable[[], str]] = {
        "none": lambda: "req_unknown",
        "pending": pending,
        "decided": decided,
        "applied": applied,
        "overdue": overdue,
        "expired": expired,
        "cancelled": cancelled,
        "no_edit": lambda: submit_call(capabilities=(DecisionKind.APPROVE, DecisionKind.REJECT)),
        "schema": lambda: submit_call(args={"id": "t1"}, args_schema=SCHEMA),
        "self": lambda: submit_call(requested_by="ann"),
        "rule": rule,
        "revoked_rule": revoked_rule,
    }
    return lambda name: builders[name]()


NOT_FOUND, CONFLICT, INVALID, USAGE = 3, 4, 5, 2

CASES = [
    # unknown ids
    ("none", ["show", "{id}"], NOT_FOUND, "no request with id 'req_unknown'"),
    ("none", ["approve", "{id}"], NOT_FOUND, "no request with id"),
    ("none", ["edit", "{id}", "--args", "{}"], NOT_FOUND, "no request with id"),
    ("none", ["reject", "{id}", "--message", "no"], NOT_FOUND, "no request with id"),
    ("none", ["respond", "{id}", "--content", "x"], NOT_FOUND, "no request with id"),
    ("none", ["cancel", "{id}"], NOT_FOUND, "no request with id"),
    ("none", ["events", "--request", "{id}"], NOT_FOUND, "no request with id"),
    ("none", ["rules", "revoke", "rule_unknown"], NOT_FOUND, "no standing rule with id 'rule_unknown'"),
    # a second decision, or a decision on an applied request
    ("decided", ["approve", "{id}"], CONFLICT, "was already decided (approve)"),
    ("decided", ["edit", "{id}", "--args", "{}"], CONFLICT, "was already decided"),
    ("decided", ["reject", "{id}", "--message", "no"], CONFLICT, "was already decided"),
    ("decided", ["respond", "{id}", "--content", "x"], CONFLICT, "was already decided"),
    ("decided", ["cancel", "{id}"], CONFLICT, "was already decided"),
    ("applied", ["approve", "{id}"], CONFLICT, "and applied"),
    ("applied", ["reject", "{id}", "--message", "no"], CONFLICT, "and applied"),
    # expired (overdue but not yet closed, and closed) and cancelled requests
    ("overdue", ["approve", "{id}"], CONFLICT, "expired at"),
    ("overdue", ["reject", "{id}", "--message", "no"], CONFLICT, "expired at"),
    ("expired", ["approve", "{id}"], CONFLICT, "expired at"),
    ("expired", ["edit", "{id}", "--args", "{}"], CONFLICT, "expired at"),
    ("expired", ["cancel", "{id}"], CONFLICT, "expired at"),
    ("cancelled", ["approve", "{id}"], CONFLICT, "was cancelled"),
    ("cancelled", ["respond", "{id}", "--content", "x"], CONFLICT, "was cancelled"),
    ("cancelled", ["cancel", "{id}"], CONFLICT, "was cancelled"),
    # decisions the request does not allow, or that are invalid
    ("no_edit", ["edit", "{id}", "--args", '{"id": "t2"}'], INVALID, "does not allow edit; allowed: approve, reject"),
    ("no_edit", ["respond", "{id}", "--content", "x"], INVALID, "does not allow respond"),
    ("pending", ["approve", "{id}", "--fingerprint", WRONG_FINGERPRINT], INVALID, "fingerprint 000000000000"),
    ("pending", ["approve", "{id}", "--reviewer", ""], INVALID, "a decision needs a reviewer name"),
    ("self", ["approve", "{id}", "--reviewer", "ann"], INVALID, "ann submitted request"),
    ("pending", ["reject", "{id}", "--message", "   "], INVALID, "a rejection needs a message"),
    ("pending", ["approve", "{id}", "--remember", "run"], INVALID, "has no run"),
    ("pending", ["approve", "{id}", "--remember", "forever", "--match", "pattern"], INVALID, "at least one argument"),
    ("pending", ["approve", "{id}", "--remember", "forever", "--this-agent-only"], INVALID, "names no agent"),
    # edit arguments
    ("pending", ["edit", "{id}", "--args", "{bad"], INVALID, "--args: arguments are not valid JSON"),
    ("pending", ["edit", "{id}", "--args", "[1, 2]"], INVALID, "arguments must be a JSON object, got list"),
    ("pending", ["edit", "{id}", "--args", '"t2"'], INVALID, "arguments must be a JSON object, got str"),
    ("pending", ["edit", "{id}", "--args", ""], INVALID, "arguments are empty"),
    ("pending", ["edit", "{id}", "--args", '{"n": NaN}'], INVALID, "NaN"),
    ("schema", ["edit", "{id}", "--args", '{"id": 5}'], INVALID, "fail the tool's schema at id: 5 is not of type"),
    ("schema", ["edit", "{id}", "--args", "{}"], INVALID, "'id' is a required property"),
    # usage errors: click's own exit code 2
    ("pending", ["reject", "{id}"], USAGE, "Missing option '--message'"),
    ("pending", ["respond", "{id}"], USAGE, "Missing option '--content'"),
    ("pending", ["edit", "{id}"], USAGE, "Missing option '--args'"),
    ("pending", ["approve"], USAGE, "Missing argument 'ID'"),
    ("pending", ["approve", "{id}", "--pattern", "id=t*"], USAGE, "need --remember"),
    ("pending", ["approve", "{id}", "--remember", "forever", "--pattern", "id"], USAGE, "expected ARG=GLOB"),
    ("pending", ["approve", "{id}", "--remember", "sometimes"], USAGE, "'sometimes' is not one of"),
    ("pending", ["approve", "{id}", "--bogus"], USAGE, "No such option: --bogus"),
    ("pending", ["list", "--status", "bogus"], USAGE, "Invalid value for '--status': 'bogus' is not one of"),
    ("pending", ["list", "--cursor", "!!!"], USAGE, "malformed cursor '!!!'"),
    ("pending", ["list", "--cursor", "bm9wZQ"], USAGE, "malformed cursor"),
    ("pending", ["list", "--limit", "0"], USAGE, "Invalid value for '--limit'"),
    ("pending", ["list", "--limit", "501"], USAGE, "Invalid value for '--limit'"),
    ("pending", ["frobnicate"], USAGE, "No such command 'frobnicate'"),
    # submit
    ("pending", ["submit", "--framework", "f", "--tool", "t", "--args", "{bad"], INVALID, "not valid JSON"),
    ("pending", ["submit", "--framework", "f", "--tool", "t", "--args", "[]"], INVALID, "got list"),
    ("pending", ["submit", "--framework", "", "--tool", "t"], INVALID, "invalid tool call: framework"),
    ("pending", ["submit", "--framework", "f"], USAGE, "Missing option '--tool'"),
    # standing rules
    ("pending", ["rules", "add", "--tool", "x", "--effect", "maybe"], USAGE, "'maybe' is not one of"),
    ("pending", ["rules", "add", "--tool", "x", "--effect", "allow", "--match", "exact"], USAGE, "go together"),
    ("pending", ["rules", "add", "--tool", "x", "--effect", "allow", "--match", "pattern"], USAGE, "--pattern"),
    ("pending", ["rules", "add", "--tool", "x", "--effect", "allow", "--scope", "run"], USAGE, "needs --run"),
    ("pending", ["rules", "add", "--tool", "x", "--effect", "allow", "--scope", "once"], USAGE, "a run, a session"),
    (
        "pending",
        ["rules", "add", "--tool", "x", "--effect", "allow", "--match", "exact", "--args", "[1]"],
        INVALID,
        "got list",
    ),
    ("revoked_rule", ["rules", "revoke", "{id}"], CONFLICT, "was already revoked"),
]


@pytest.mark.parametrize(("state", "argv", "code", "message"), CASES, ids=[" ".join(c[1]) for c in CASES])
def test_bad_input_exits_with_its_code_and_changes_nothing(
    cli: Cli, setup: Setup, state: str, argv: list[str], code: int, message: str
) -> None:
    target = setup(state)
    before = cli.snapshot()
    result = cli(*(a.replace("{id}", target) for a in argv))
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crossgate: error: ")
    assert message in lines[0]
    assert cli.snapshot() == before


def test_a_policy_file_that_cannot_be_loaded_exits_1(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    result = CliRunner().invoke(
        app, ["--db", str(tmp_path / "q.db"), "--policy", str(missing), "list"], env=clean_env()
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("crossgate: error: ")
    assert str(missing) in result.stderr


def test_a_database_that_cannot_be_opened_exits_1(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(app, ["--db", str(blocker / "q.db"), "init"], env=clean_env())  # init creates
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("crossgate: error: cannot create the folder for SQLite database")
    assert len(result.stderr.splitlines()) == 1


def test_a_file_that_is_not_a_database_exits_1(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    result = CliRunner().invoke(app, ["--db", str(junk), "list"], env=clean_env())
    assert result.exit_code == 1
    assert result.stderr.startswith("crossgate: error: ")
    assert len(result.stderr.splitlines()) == 1
    assert junk.read_bytes() == b"this is not sqlite" * 100

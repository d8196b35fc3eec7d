"""Hostile values on the command line, against a SQLite database: one line on stderr with the exit code,
never a traceback, and nothing stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from crossgate import ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.cli import app
from crossgate.limits import MAX_INT64, InputLimits
from crossgate.stores.base import encode_cursor
from tests.cli.conftest import Cli, clean_env
from tests.support.hidden_text import HIDING, PLAIN

USAGE, INVALID = 2, 5
TOO_BIG = str(MAX_INT64 + 1)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[ReviewQueue]:
    q = ReviewQueue(open_store(str(tmp_path / "q.db")), authority=Authority.generate())
    yield q
    q.close()


@pytest.fixture
def cli(queue: ReviewQueue) -> Cli:
    return Cli(queue, CliRunner())


@pytest.fixture
def pending(cli: Cli) -> str:
    return str(cli.submit()["id"])


def refused(cli: Cli, code: int, *argv: str) -> str:
    """Run ``argv``; assert exit ``code``, one stderr line, nothing on stdout, nothing stored. The line."""
    before = cli.snapshot()
    result: Result = cli(*argv)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr[:2000])
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossgate: error: "), result.stderr[:2000]
    assert "Traceback" not in result.stderr
    assert cli.snapshot() == before
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["events", "--after", TOO_BIG],
        ["events", "--after", "9" * 5000],
        ["events", "--limit", TOO_BIG],
        ["list", "--limit", TOO_BIG],
        ["list", "--cursor", encode_cursor(MAX_INT64 + 1)],
        ["runs", "prune", "--older-than", "999999999d"],
        ["runs", "prune", "--older-than", "9" * 5000 + "d"],
    ],
    ids=lambda argv: " ".join(a[:24] for a in argv),
)
def test_integers_beyond_64_bits_are_usage_errors(cli: Cli, pending: str, argv: list[str]) -> None:
    line = refused(cli, USAGE, *argv)
    assert len(line) < 400


def test_the_largest_64_bit_seq_is_answered(cli: Cli, pending: str) -> None:
    assert cli.json("events", "--after", str(MAX_INT64))["items"] == []


def test_a_real_command_line_with_a_huge_after_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "q.db"), "events", "--after", TOO_BIG], env=clean_env())
    assert result.exit_code == USAGE and "--after" in result.stderr and "Traceback" not in result.stderr


DEEP = "[" * 990 + "]" * 990
HOSTILE_ARGS = {
    "nested 990 deep": ('{"id": ' + DEEP + "}", "nested too deeply (arguments may nest 64 levels deep)"),
    "nested 65 deep": ('{"id": ' + "[" * 65 + "]" * 65 + "}", "nested too deeply"),
    "5,000 digits": ('{"id": ' + "7" * 5000 + "}", "more than 100 digits"),
    "1e400": ('{"id": 1e400}', "beyond the range"),
    "an escaped lone surrogate": ('{"id": "\\ud800"}', "lone surrogate (U+D800)"),
    "a repeated key": ('{"id": "t1", "id": "t2"}', "repeats the key 'id'"),
}


@pytest.mark.parametrize(("args", "words"), HOSTILE_ARGS.values(), ids=HOSTILE_ARGS.keys())
def test_hostile_json_is_refused_with_exit_5(cli: Cli, pending: str, args: str, words: str) -> None:
    for argv in (
        ["edit", pending, "--args", args],
        ["submit", "--framework", "f", "--tool", "t", "--args", args],
        ["rules", "add", "--tool", "t", "--effect", "allow", "--match", "exact", "--args", args],
    ):
        line = refused(cli, INVALID, *argv)
        assert words in line, line


@pytest.mark.parametrize(
    "argv",
    [
        ["reject", "{id}", "--message", "no \ud800"],
        ["respond", "{id}", "--content", "\udcff"],
        ["approve", "{id}", "--note", "\ud83d"],
        ["approve", "{id}", "--reviewer", "\udc80ann"],
        ["show", "req_\ud800"],
        ["edit", "{id}", "--args", '{"id": "\ud800"}'],
        ["submit", "--framework", "f", "--tool", "t\udc00"],
        ["rules", "add", "--tool", "t\udc00", "--effect", "allow"],
        ["cancel", "{id}", "--reason", "\udc00"],
    ],
    ids=lambda argv: argv[0] + " " + argv[-2],
)
def test_arguments_that_are_not_utf8_are_usage_errors(cli: Cli, pending: str, argv: list[str]) -> None:
    line = refused(cli, USAGE, *(a.replace("{id}", pending) for a in argv))
    assert "is not valid UTF-8 text" in line and "\\u" not in line.split("(")[0]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Cli]:
    queue = ReviewQueue(open_store(str(tmp_path / "small.db")), limits=SMALL, authority=Authority.generate())
    yield Cli(queue, CliRunner())
    queue.close()


SMALL = InputLimits(args_bytes=2000, message_bytes=300, note_bytes=100)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["edit", "{id}", "--args", '{"id": "' + "x" * 2500 + '"}'], "arguments are 2509 bytes as JSON"),
        (["reject", "{id}", "--message", "é" * 200], "the message is 400 bytes, over the limit of 300 bytes"),
        (["respond", "{id}", "--content", "x" * 301], "the content is 301 bytes"),
        (["approve", "{id}", "--note", "x" * 101], "the note is 101 bytes, over the limit of 100 bytes"),
        (["cancel", "{id}", "--reason", "x" * 301], "the reason is 301 bytes"),
        (["rules", "add", "--tool", "t", "--effect", "deny", "--message", "x" * 301], "the rule's message is 301"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else "",
)
def test_fields_over_their_limit_exit_5(small: Cli, argv: list[str], words: str) -> None:
    pending = str(small.submit()["id"])
    line = refused(small, INVALID, *(a.replace("{id}", pending) for a in argv))
    assert words in line, line


def test_a_call_over_the_argument_limit_is_denied_and_recorded_without_its_arguments(small: Cli) -> None:
    huge = '{"id": "' + "x" * 5000 + '"}'
    result = small.submit("delete_ticket", huge)
    assert result["verdict"] == "deny" and result["id"] is None
    assert "arguments are 5009 bytes as JSON, over the limit of 2000 bytes" in result["verdict_reason"]
    assert small.json("list", "--status", "all")["items"] == []
    (event,) = small.json("events")["items"]
    assert event["kind"] == "auto_denied" and "args" not in event["payload"]
    assert event["payload"]["tool"] == "delete_ticket" and "x" * 100 not in json.dumps(event)
    assert small.ok("audit", "verify").stdout.startswith("audit log intact")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"id": "\ud800"}, "lone surrogate (U+D800)"),
        ({"\udc00": 1}, "lone surrogate (U+DC00)"),
        ({"n": 10**200}, "at most 100 digits"),
        ({"x": "y" * 3000}, "over the limit of 2000 bytes"),
    ],
)
def test_an_adapter_call_the_limits_refuse_is_denied_with_a_reason_the_model_reads(
    small: Cli, args: dict[str, Any], words: str
) -> None:
    nested: Any = "leaf"
    for _ in range(70):
        nested = [nested]
    calls = [
        ToolCall(framework="openai-agents", tool="delete_ticket", args=args, run="r1"),
        ToolCall(framework="openai-agents", tool="delete_ticket", args={"deep": nested}, run="r1"),
        ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "t1"}, run="r\ud800"),
    ]
    for call in calls:
        submission = small.queue.submit(call, request_id="req_fixed")
        assert submission.verdict.kind is VerdictKind.DENY and submission.request is None
        assert "crossgate refused this tool call without asking anyone" in submission.verdict.reason
    reasons = [e.payload["reason"] for e in small.queue.events()]
    assert words in reasons[0] and "nested too deeply" in reasons[1] and "$.run: holds a lone surrogate" in reasons[2]
    assert small.queue.list_requests().items == [] and small.queue.verify_audit().ok


@pytest.mark.parametrize(("text", "shown", "finding"), HIDING.values(), ids=HIDING.keys())
def test_show_escapes_hidden_characters_and_warns(cli: Cli, text: str, shown: str | None, finding: str) -> None:
    rid = str(cli.submit(args=json.dumps({"to": text}, ensure_ascii=False))["id"])
    out = cli.ok("show", rid).stdout
    (warning,) = [line for line in out.splitlines() if line.startswith("warning")]
    assert "hidden or look-alike characters: " in warning and finding in warning, warning
    args_line = next(line for line in out.splitlines() if line.startswith("args"))
    if shown is not None:
        assert text not in out and shown in args_line
    else:
        assert text in args_line
    assert cli.json("show", rid)["args"] == {"to": text}  # machines get the exact value


@pytest.mark.parametrize("text", PLAIN)
def test_show_does_not_warn_about_plain_text(cli: Cli, text: str) -> None:
    rid = str(cli.submit(args=json.dumps({"to": text}, ensure_ascii=False))["id"])
    assert "warning" not in cli.ok("show", rid).stdout

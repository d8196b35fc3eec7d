"""Hostile values on the command line, against a SQLite database: one line on stderr with the exit code,
never a traceback, and nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from crossgate import ReviewQueue, open_store
from crossgate.cli import app
from crossgate.limits import MAX_INT64
from crossgate.stores.base import encode_cursor
from tests.cli.conftest import Cli, clean_env

USAGE, INVALID = 2, 5
TOO_BIG = str(MAX_INT64 + 1)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[ReviewQueue]:
    q = ReviewQueue(open_store(str(tmp_path / "q.db")))
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
    assert cli.json("events", "--after", str(MAX_INT64)) == []


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

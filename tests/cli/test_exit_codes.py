"""The one mapping from the error tree to exit codes covers every crossgate error, and each row of the
README's table is what the command exits with."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import crossgate.errors as errors
from crossgate.cli import app
from crossgate.cli.deciding import NoCredentialsError
from crossgate.cli.exit_codes import exit_code_for, one_line
from tests.support.keys import operator_keys

ALL_ERRORS = sorted(
    (cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.CrossgateError)),
    key=lambda cls: cls.__name__,
)


def expected(cls: type[errors.CrossgateError]) -> int:
    if issubclass(cls, NoCredentialsError):
        return 6
    if issubclass(cls, errors.NotFoundError):
        return 3
    if issubclass(cls, errors.ConflictError):
        return 4
    if issubclass(cls, errors.InvalidDecisionError):
        return 5
    return 1


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.__name__)
def test_every_error_has_its_exit_code(cls: type[errors.CrossgateError]) -> None:
    assert exit_code_for(cls("x")) == expected(cls)


def test_the_tree_is_mapped_as_documented() -> None:
    codes = {cls.__name__: exit_code_for(cls("x")) for cls in ALL_ERRORS}
    assert codes["AlreadyDecidedError"] == codes["RequestExpiredError"] == codes["RequestCancelledError"] == 4
    assert codes["FingerprintMismatchError"] == codes["InvalidArgumentsError"] == codes["DecisionNotAllowedError"] == 5
    assert codes["ConfigurationError"] == codes["StoreError"] == codes["CrossgateError"] == 1
    assert codes["NotFoundError"] == codes["DatabaseNotFoundError"] == 3
    assert exit_code_for(NoCredentialsError("x")) == 6


def test_messages_are_folded_onto_one_line() -> None:
    assert one_line("first line\n  second\tline ") == "first line second line"


README = Path(__file__).resolve().parents[2] / "README.md"
DENY_DROPS = "version: 1\nrules:\n  - {name: no-drops, verdict: deny, tool: drop_table, reason: never}\n"


def documented_codes() -> dict[int, str]:
    """The README's table: ``CLI exit codes: 0 ok, 2 usage, ...``, code to its first word."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    table = text.split("CLI exit codes: ", 1)[1].split(". ", 1)[0]
    rows = re.findall(r"(?:^|, )(\d) (\w+)", table)
    return {int(code): word for code, word in rows}


def test_the_readme_lists_each_code_once() -> None:
    assert documented_codes() == {
        0: "ok",
        2: "usage",
        3: "not",
        4: "conflict",
        5: "invalid",
        6: "denied",
        1: "other",
    }


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a database with one pending request, and no credential anywhere."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deny.yaml").write_text(DENY_DROPS, encoding="utf-8")
    assert crossgate("init").exit_code == 0
    assert crossgate("submit", "--framework", "langgraph", "--tool", "delete_ticket", "--args", "{}").exit_code == 0
    return tmp_path


def crossgate(*argv: str, keys: Path | None = None) -> Result:
    env = {"CROSSGATE_DB": "crossgate.db", "CROSSGATE_POLICY": None, "CROSSGATE_TOKEN": None}
    env["CROSSGATE_AUTHORITY_DIR"] = str(keys or Path.cwd() / "no-keys")
    env["XDG_CONFIG_HOME"] = str(Path.cwd() / "config")
    return CliRunner().invoke(app, list(argv), env=env)


def the_request() -> str:
    return str(json.loads(crossgate("list", "--status", "all", "--json").stdout)["items"][0]["id"])


ROWS: dict[int, Callable[[], Result]] = {
    0: lambda: crossgate("list"),
    2: lambda: crossgate("list", "--no-such-option"),
    3: lambda: crossgate("show", "req_no_such_request"),
    4: lambda: crossgate("approve", the_request(), "--reviewer", "ann", keys=operator_keys()),
    5: lambda: crossgate("edit", the_request(), "--args", "[1, 2]", keys=operator_keys()),
    6: lambda: crossgate("approve", the_request(), "--reviewer", "ann"),
    1: lambda: crossgate("--policy", "missing.yaml", "list"),
}


@pytest.mark.parametrize("code", list(ROWS), ids=lambda code: f"exit {code}")
def test_every_row_of_the_readmes_table(folder: Path, code: int) -> None:
    if code == 4:  # a conflict: the request was decided already
        assert crossgate("approve", the_request(), "--reviewer", "ann", keys=operator_keys()).exit_code == 0
    result = ROWS[code]()
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    if code != 0:
        assert result.stderr.count("\n") == 1, result.stderr


def test_a_missing_database_is_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = crossgate("list")
    assert result.exit_code == 3 and "no crossgate database at crossgate.db" in result.stderr
    assert not (tmp_path / "crossgate.db").exists()


def test_a_call_the_policy_denies_is_denied(folder: Path) -> None:
    submitted = crossgate("--policy", "deny.yaml", "submit", "--framework", "x", "--tool", "drop_table", "--args", "{}")
    assert submitted.exit_code == 6


def test_an_approval_without_credentials_is_denied_and_decides_nothing(folder: Path) -> None:
    request_id = the_request()
    refused = crossgate("approve", request_id, "--reviewer", "ann")
    assert refused.exit_code == 6 and "needs a reviewer's credentials" in refused.stderr
    as_json = crossgate("approve", request_id, "--reviewer", "ann", "--json")
    assert json.loads(as_json.stdout)["error"]["exit_code"] == 6
    assert json.loads(crossgate("show", request_id, "--json").stdout)["status"] == "pending"

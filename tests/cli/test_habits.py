"""The CLI against gh/kubectl habits: --version, -h, completion, id prefixes, clean help, JSON errors,
and no database created by a read-only command or a mistyped --db."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgate.cli import app
from crossgate.cli.app import crossgate_version
from crossgate.cli.exit_codes import NOT_FOUND, USAGE
from tests.cli.conftest import CROSSGATE, Cli, clean_env, subprocess_env

COMMANDS = [
    ["list"], ["show", "req_x"], ["approve", "req_x"], ["events"], ["rules", "list"], ["runs", "list"],
    ["audit", "verify"], ["expire"],
]  # fmt: skip


def test_version_and_short_help(cli: Cli) -> None:
    assert cli.ok("--version").stdout == f"crossgate {crossgate_version()}\n"
    assert crossgate_version() == "0.1.0"
    assert cli.ok("-h").stdout == cli.ok("--help").stdout
    assert cli.ok("approve", "-h").stdout == cli.ok("approve", "--help").stdout
    assert cli.ok("rules", "add", "-h").stdout.startswith("Usage: crossgate rules add [OPTIONS]")


def test_completion_scripts_are_offered(cli: Cli) -> None:
    script = cli.ok("--show-completion", "bash").stdout
    assert "_CROSSGATE_COMPLETE=complete_bash" in script
    assert "--install-completion" in cli.ok("--help").stdout


@pytest.mark.slow
def test_bash_completion_completes_command_names(tmp_path: Path) -> None:
    env = subprocess_env(_CROSSGATE_COMPLETE="complete_bash", COMP_WORDS="crossgate ap", COMP_CWORD="1")
    done = subprocess.run([str(CROSSGATE)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["approve"])
    assert not (tmp_path / "crossgate.db").exists()


def every_help(cli: Cli) -> dict[str, str]:
    texts = {"": cli.ok("--help").stdout}
    for group in ("rules", "runs", "policy", "audit"):
        texts[group] = cli.ok(group, "--help").stdout
    names = [line.split()[0] for line in texts[""].split("Commands:")[1].splitlines() if line.startswith("  ") and
             not line.startswith("   ")]  # fmt: skip
    for name in names:
        texts[name] = cli.ok(name, "--help").stdout
    return texts


def test_help_shows_no_python_types_and_whole_summaries(cli: Cli) -> None:
    texts = every_help(cli)
    assert len(texts) > 15
    for name, text in texts.items():
        assert "{" not in text.split("\n")[0], (name, text.split("\n")[0])
        assert "<list[" not in text and "<str>" not in text and "<int>" not in text, name
    assert "Usage: crossgate approve [OPTIONS] ID...\n" in texts["approve"]
    assert "Usage: crossgate show [OPTIONS] ID\n" in texts["show"]
    root = " ".join(texts[""].split())
    assert "Respond to a request as the tool: the content is its result and the tool does not run." in root
    assert "..." not in root.split("Commands:")[1], "no summary is cut off"
    runs = " ".join(texts["runs"].split())
    assert "Offer a failed run for resuming again; calls its failed attempt applied never run twice." in runs


@pytest.fixture
def two_alike(submit_call: Callable[..., str]) -> tuple[str, str, str]:
    a = submit_call(request_id="req_lg_3222aa")
    b = submit_call(request_id="req_lg_3222bb", args={"id": "t2"})
    c = submit_call(request_id="req_oa_9000", args={"id": "t3"})
    return a, b, c


def test_a_unique_prefix_stands_for_its_id_in_every_command(cli: Cli, two_alike: tuple[str, str, str]) -> None:
    a, b, c = two_alike
    assert cli.json("show", "req_oa")["id"] == c
    assert cli.json("show", "req_lg_3222a")["id"] == a
    assert [e["request_id"] for e in cli.json("events", "--request", "req_lg_3222b")["items"]] == [b]
    assert cli.ok("approve", "req_lg_3222a", "req_oa", "--reviewer", "ann").stdout.split("\n")[:2] == [
        f"approved {a} (delete_ticket) as ann",
        f"approved {c} (delete_ticket) as ann",
    ]
    assert cli.json("reject", "req_lg_3222b", "--message", "no", "--reviewer", "ann")["id"] == b
    rule = cli.json("rules", "add", "--tool", "read_*", "--effect", "allow")["id"]
    assert cli.json("rules", "revoke", rule[:-3])["id"] == rule


def test_an_ambiguous_prefix_lists_the_candidates_exits_2_and_decides_nothing(
    cli: Cli, two_alike: tuple[str, str, str]
) -> None:
    a, b, _ = two_alike
    before = cli.snapshot()
    for argv in (["approve", "req_lg_3222"], ["approve", "req_oa", "req_lg"], ["show", "req_"], ["cancel", "req_lg"]):
        result = cli(*argv)
        assert result.exit_code == USAGE, argv
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert f"is the start of {'3' if argv[-1] == 'req_' else '2'} request ids: " in result.stderr
        assert a in result.stderr and b in result.stderr
    assert cli.snapshot() == before


def test_a_prefix_of_nothing_is_not_found_and_an_exact_id_wins(cli: Cli, submit_call: Callable[..., str]) -> None:
    short = submit_call(request_id="req_ab")
    longer = submit_call(request_id="req_abc", args={"id": "t2"})
    assert cli.json("show", "req_ab")["id"] == short, "an existing id is never read as a prefix"
    assert cli.json("show", "req_abc")["id"] == longer
    missing = cli("approve", "req_zz")
    assert (missing.exit_code, missing.stderr) == (NOT_FOUND, "crossgate: error: no request with id 'req_zz'\n")


def test_errors_are_json_on_stdout_when_json_is_asked(cli: Cli) -> None:
    missing = cli("show", "req_nope", "--json")
    assert missing.exit_code == NOT_FOUND
    error = {"exit_code": NOT_FOUND, "type": "NotFoundError", "message": "no request with id 'req_nope'"}
    assert json.loads(missing.stdout) == {"error": error}
    assert missing.stderr == "crossgate: error: no request with id 'req_nope'\n"
    usage = cli("list", "--status", "bogus", "--json")
    assert usage.exit_code == USAGE
    assert json.loads(usage.stdout)["error"]["type"] == "UsageError"
    assert cli("show", "req_nope").stdout == "", "text mode keeps stdout clean"


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a))
def test_a_read_command_in_an_empty_folder_creates_no_database(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv, env=clean_env())
    assert result.exit_code == 3  # not found
    assert result.stderr == (
        "crossgate: error: no crossgate database at crossgate.db: check --db (or $CROSSGATE_DB), "
        "or create one with 'crossgate init'\n"
    )
    assert os.listdir(tmp_path) == []


def test_a_mistyped_db_creates_nothing_and_init_and_submit_create(tmp_path: Path) -> None:
    real, typo = tmp_path / "queue.db", tmp_path / "queu.db"

    def run(*argv: str) -> object:
        return CliRunner().invoke(app, list(argv), env=clean_env())

    assert run("--db", str(real), "init").stdout == f"created the crossgate database: {real}\n"  # type: ignore[attr-defined]
    assert run("--db", str(real), "init").stdout == f"database ready: {real}\n"  # type: ignore[attr-defined]
    typoed = run("--db", str(typo), "list")
    assert typoed.exit_code == 3 and f"no crossgate database at {typo}" in typoed.stderr  # type: ignore[attr-defined]
    assert not typo.exists()
    submitted = run("--db", str(tmp_path / "new.db"), "submit", "--framework", "f", "--tool", "t")
    assert submitted.exit_code == 0  # type: ignore[attr-defined]
    assert (tmp_path / "new.db").exists()
    assert run("--db", str(real), "list").exit_code == 0  # type: ignore[attr-defined]
    assert run("--db", "memory:", "list").exit_code == 0  # type: ignore[attr-defined]


def test_a_parked_run_is_found_by_its_start_too(cli: Cli, submit_call: Callable[..., str]) -> None:
    first = cli.queue.park(framework="langgraph", run="r1", request_ids=[submit_call()], state="{}")
    second = cli.queue.park(framework="langgraph", run="r2", request_ids=[submit_call(args={"id": "t2"})], state="{}")
    assert cli.json("runs", "show", first.id[:-4])["id"] == first.id
    common = next(i for i in range(len(first.id)) if first.id[i] != second.id[i])
    ambiguous = cli("runs", "show", first.id[:common])
    assert ambiguous.exit_code == USAGE
    assert "2 parked run ids" in ambiguous.stderr and first.id in ambiguous.stderr and second.id in ambiguous.stderr


def test_every_list_command_prints_one_envelope(cli: Cli, submit_call: Callable[..., str]) -> None:
    for n in range(3):
        submit_call(args={"id": f"t{n}"})
    for argv in (["list"], ["events"], ["expire"], ["rules", "list"], ["runs", "list"]):
        listed = cli.json(*argv)
        assert set(listed) == {"items", "next_cursor"} and isinstance(listed["items"], list), argv
    first = cli.json("events", "--limit", "2")
    assert len(first["items"]) == 2 and first["next_cursor"] == str(first["items"][-1]["seq"])
    rest = cli.json("events", "--after", first["next_cursor"])
    assert rest["next_cursor"] is None
    assert [e["seq"] for e in first["items"] + rest["items"]] == [e["seq"] for e in cli.json("events")["items"]]

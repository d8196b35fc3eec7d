"""Fuzz every CLI command's arguments with hostile values (hypothesis): an exit code from the table, no
traceback, and nothing stored when the command refuses.

Commands and their options come from the click command tree, so a new command is fuzzed without
touching this file. ``serve`` and ``worker`` run until stopped, so only their refusals are tried, by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from crossgate import ReviewQueue, ToolCall, open_store
from crossgate.authority import Authority
from crossgate.cli import app
from crossgate.limits import MAX_INT64
from tests.cli.conftest import Cli
from tests.server.test_fuzz import HOSTILE_JSON, HOSTILE_TEXT

pytestmark = pytest.mark.slow

LONG_RUNNING = ("serve", "worker")
EXIT_CODES = {0, 1, 2, 3, 4, 5}
IDS = {"request_id", "request_ids", "rule_id", "parked_id"}
"""Arguments that name something stored: sometimes a real one, so the command gets past the lookup."""


def leaf_commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command ``crossgate`` has, by its path (``("rules", "add")``)."""
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            found.append((path, command))
            return
        for name, sub in sorted(subcommands.items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return [(path, command) for path, command in found if path[0] not in LONG_RUNNING]


COMMANDS = leaf_commands()
VALUES = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.sampled_from(HOSTILE_JSON),
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["0", "1", str(MAX_INT64), "7d", "30m", "pattern", "exact", "run", "forever", "allow", "deny"]),
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    folder = Path(tmp_path_factory.mktemp("cli-fuzz"))
    queue = ReviewQueue(open_store(str(folder / "q.db")), authority=Authority.generate())
    # A fuzzed path argument (keys --dir 0, a default key directory) lands in this folder, not the checkout.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("CROSSGATE_AUTHORITY_DIR", str(folder / "authority"))
        yield Cli(queue, CliRunner())
    queue.close()


def stored(queue: ReviewQueue) -> tuple[Any, ...]:
    requests = [r.model_dump() for r in queue.list_requests().items]
    runs = [r.model_dump() for r in queue.parked_runs()]
    return requests, queue.events(limit=10_000), queue.rules(include_revoked=True), runs


def _argv(data: st.DataObject, path: tuple[str, ...], command: Any, real_id: str) -> list[str]:
    argv = list(path)
    for param in command.params:
        if param.param_type_name == "argument":
            if param.name in IDS:
                value = data.draw(st.one_of(st.just(real_id), VALUES), label=param.name)
            else:
                value = data.draw(VALUES, label=param.name)
            argv.append(value)  # one id even where several are taken: a refusal then changes nothing
            continue
        if not data.draw(st.booleans(), label=f"give {param.name}"):
            continue
        if getattr(param, "is_flag", False):
            argv.append(param.opts[0])
        else:
            argv += [param.opts[0], data.draw(VALUES, label=str(param.name))]
    return argv


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_refuses_hostile_arguments_cleanly(
    world: Cli, path: tuple[str, ...], command: Any, data: st.DataObject
) -> None:
    queue = world.queue
    submission = queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"}))
    assert submission.request is not None
    argv = _argv(data, path, command, submission.request.id)
    if data.draw(st.booleans(), label="give --policy"):
        argv = ["--policy", data.draw(VALUES, label="policy"), *argv]
    before = stored(queue)
    result = world(*argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), (argv, repr(result.exception))
    assert result.exit_code in EXIT_CODES, (argv, result.exit_code)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, (argv, result.stderr[-2000:])
    if result.exit_code != 0:
        assert result.stderr.startswith("crossgate: "), (argv, result.stderr[:500])
        assert stored(queue) == before, argv


@pytest.mark.parametrize(
    "argv",
    [
        ["edit", "{id}", "--args", '{"id": "' + "x" * 10_000_000 + '"}'],
        ["reject", "{id}", "--message", "x" * 10_000_000],
        ["submit", "--framework", "f", "--tool", "t", "--args", '{"id": "' + "x" * 10_000_000 + '"}'],
    ],
    ids=["edit --args", "reject --message", "submit --args"],
)
def test_a_10_mb_value_is_refused_in_one_line(world: Cli, argv: list[str]) -> None:
    submission = world.queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"}))
    assert submission.request is not None
    before = stored(world.queue)
    result = world(*(a.replace("{id}", submission.request.id) for a in argv))
    if argv[0] == "submit":  # a model's call over the limit is denied, and recorded without its arguments
        assert result.exit_code == 6 and "denied by policy" in result.stdout  # 6: a denied submit
        assert "x" * 1000 not in str(world.queue.events()[-1].payload)
        return
    assert result.exit_code == 5, result.stderr[:500]
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) < 600
    assert stored(world.queue) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", str(2**64)],
        ["serve", "--port", "-1"],
        ["serve", "--port", "9" * 5000],
        ["serve", "--host", "\ud800"],
        ["serve", "--base-url", "javascript:alert(1)"],
        ["serve", "--webhook-format", "xml"],
        ["worker", "--app", "x:y", "--poll", "1e400"],
        ["worker", "--app", "x:y", "--poll", "nan"],
        ["worker", "--app", "x:y", "--poll", "0"],
    ],
)
def test_serve_and_worker_refuse_hostile_options(world: Cli, argv: list[str]) -> None:
    before = stored(world.queue)
    result = world(*argv)
    assert result.exit_code in (1, 2), (result.exit_code, result.stdout, result.stderr[:500])
    assert result.stderr.startswith("crossgate: error: ") and len(result.stderr.splitlines()) == 1
    named = (argv[-2], argv[-2].lstrip("-").replace("-", "_"), "not valid UTF-8")
    assert any(n in result.stderr for n in named), result.stderr  # refused for this option, not another
    assert "Traceback" not in result.stderr
    assert stored(world.queue) == before

"""Fixtures for the CLI tests: a queue the commands run against, and a way to snapshot what is stored."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from typer.testing import CliRunner, Result

from crossgate import MemoryStore, Policy, ReviewQueue, ToolCall
from crossgate.authority import Authority
from crossgate.cli import CliContext, app
from tests.support.clock import FakeClock
from tests.support.keys import operator_keys

CROSSGATE = Path(sys.executable).parent / "crossgate"
"""The installed console script."""


@dataclass
class Cli:
    """Runs ``crossgate`` in-process against one queue."""

    queue: ReviewQueue
    runner: CliRunner

    def __call__(self, *args: str) -> Result:
        return self.runner.invoke(app, list(args), obj=CliContext(queue=self.queue), env=clean_env())

    def ok(self, *args: str) -> Result:
        result = self(*args)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json").stdout)

    def submit(self, tool: str = "delete_ticket", args: str = '{"id": "t3"}', *extra: str) -> dict[str, Any]:
        """Submit through the CLI; a policy deny (exit 6) is a result here, not a failure."""
        result = self("submit", "--framework", "langgraph", "--tool", tool, "--args", args, *extra, "--json")
        assert result.exit_code in (0, 6), (result.exit_code, result.stdout, result.stderr)
        submitted: dict[str, Any] = json.loads(result.stdout)
        assert (result.exit_code == 6) == (submitted["verdict"] == "deny")
        return submitted

    def snapshot(self) -> tuple[Any, Any, Any]:
        """What the store holds, read through the CLI: every request, every event, every rule."""
        return (
            self.json("list", "--status", "all", "--limit", "500"),
            self.json("events")["items"],
            self.json("rules", "list", "--all")["items"],
        )


LEAKING = ("CROSSGATE_DB", "CROSSGATE_POLICY", "CROSSGATE_SERVER", "CROSSGATE_TOKEN")
"""What the environment running the tests must not hand to the commands they run."""
NO_LOGIN = tempfile.mkdtemp(prefix="crossgate-test-config-")
"""A config folder with no ``crossgate login`` in it, so a developer's own login never answers a test."""
atexit.register(shutil.rmtree, NO_LOGIN, ignore_errors=True)


def clean_env() -> dict[str, str | None]:
    """No database, policy or review server leaking in from the environment running the tests."""
    return dict.fromkeys(LEAKING)


def subprocess_env(**extra: str) -> dict[str, str]:
    """The test run's environment for a ``crossgate`` process, holding an operator's signing key."""
    env = {k: v for k, v in os.environ.items() if k not in LEAKING}
    env["CROSSGATE_AUTHORITY_DIR"] = str(operator_keys())
    env["XDG_CONFIG_HOME"] = NO_LOGIN
    env.update(extra)
    return env


@pytest.fixture(scope="session", autouse=True)
def _build_the_command_once() -> Iterator[None]:
    # CliRunner rebuilds the click command from the Typer app on every invoke (~60 ms); the app does
    # not change between invocations, so build it once.
    built = typer.main.get_command(app)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            typer.testing, "_get_command", lambda target: built if target is app else typer.main.get_command(target)
        )
        yield


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> Iterator[ReviewQueue]:
    # The CLI decides only with credentials: this queue holds the authority's key, as an operator's CLI does.
    # Its approvals never lapse (written out: the default is one hour), so the output shows no window row.
    policy = Policy(default_timeout_seconds=3600, default_apply_within_seconds="never")
    q = ReviewQueue(MemoryStore(), policy, clock=clock, authority=Authority.generate())
    yield q
    q.close()


@pytest.fixture
def cli(queue: ReviewQueue) -> Cli:
    return Cli(queue, CliRunner())


@pytest.fixture
def submit_call(queue: ReviewQueue) -> Callable[..., str]:
    """Submit through the queue API (for options the CLI does not offer) and return the request id."""

    def submit(tool: str = "delete_ticket", args: dict[str, Any] | None = None, **options: Any) -> str:
        call_fields = {k: options.pop(k) for k in ("run", "session", "agent") if k in options}
        call = ToolCall(framework="openai-agents", tool=tool, args=args or {"id": "t1"}, **call_fields)
        request = queue.submit(call, **options).request
        assert request is not None
        return request.id

    return submit

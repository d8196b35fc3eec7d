"""``crossgate policy``: check a policy file, and replay the log's calls against a candidate policy.

The stored, signed versions (``apply``, ``show``, ``history``, ``diff``) are in ``cli.policy_versions``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import typer

from crossgate.cli.context import queue_of
from crossgate.cli.deciding import local_only
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import print_json, print_replay, replay_json, say
from crossgate.model import Event
from crossgate.policy import load_policy
from crossgate.policy.check import check_policy
from crossgate.policy.replay import replay
from crossgate.queue import ReviewQueue

policy_app = typer.Typer(
    name="policy",
    help="The one stored, signed policy (apply, show, history, diff); check a file, and replay the log against it.",
)

PAGE = 1000


@policy_app.command("replay")
def replay_policy(
    ctx: typer.Context,
    candidate: Annotated[str, typer.Argument(metavar="FILE", help="The candidate policy file (YAML, TOML or JSON).")],
    show_all: Annotated[bool, typer.Option("--all", help="List every distinct call, not only changed ones.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when the candidate changes any verdict (for CI).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Evaluate every call the log has seen under the current policy (stored, or --policy) and FILE; records nothing.

    Both see the same standing rules and clock, so what differs is the policy alone.
    """
    local_only(ctx, "policy replay", "it evaluates the log with the policy this machine loads")
    proposed = load_policy(candidate)
    queue = queue_of(ctx)
    report = replay(_all_events(queue), queue.policy, proposed, standing_rules=queue.rules(), now=queue.now())
    if as_json:
        print_json(replay_json(report, changed_only=not show_all))
    else:
        print_replay(report, changed_only=not show_all)
    if check and report.changed:
        raise typer.Exit(1)


@policy_app.command("check")
def check(
    file: Annotated[str, typer.Argument(metavar="FILE", help="The policy file (YAML, TOML or JSON).")],
    as_json: JsonFlag = False,
) -> None:
    """Load FILE and name each rule that can never match, is shadowed, or tests a context key no adapter sets.

    Prints "ok" and exits 0 when there is nothing to report; otherwise one line per finding, and exits 1.
    Needs no store.
    """
    findings = check_policy(load_policy(file))
    if as_json:
        print_json(
            {
                "ok": not findings,
                "findings": [{"rule": f.rule, "kind": f.kind, "message": f.message} for f in findings],
            }
        )
    elif not findings:
        say(f"{file}: ok")
    for finding in [] if as_json else findings:
        say(f"{file}: rule {finding.rule!r}: {finding.message}")
    if findings:
        raise typer.Exit(1)


def _all_events(queue: ReviewQueue) -> Iterator[Event]:
    """The whole log, read a page at a time so a long one is never held in memory at once."""
    after = 0
    while page := queue.events(after=after, limit=PAGE):
        yield from page
        after = page[-1].seq


def register(app: typer.Typer) -> None:
    """Add ``policy`` to ``app``."""
    app.add_typer(policy_app)

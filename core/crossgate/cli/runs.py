"""``crossgate runs``: parked runs (paused SDK runs waiting for decisions): list, show, retry, prune."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

import typer

from crossgate.cli.deciding import ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.ids import ParkedId, parked_id
from crossgate.cli.options import JsonFlag, Reviewer
from crossgate.cli.output import (
    list_json,
    parked_run_json,
    print_json,
    print_parked_run,
    print_parked_runs,
    print_pruned,
    pruned_json,
    say,
)
from crossgate.model import ApprovalRequest, ParkedRunStatus, RequestStatus

runs_app = typer.Typer(name="runs", help="Parked runs: paused SDK runs waiting for decisions, and their resumes.")


@runs_app.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[
        list[ParkedRunStatus] | None,
        typer.Option("--status", help="Only runs with this status (repeatable). [default: every status]"),
    ] = None,
    framework: Annotated[str | None, typer.Option("--framework", metavar="NAME", help="Only this framework.")] = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """List parked runs, oldest first: status, requests, resume attempts, lease and outcome."""
    backend = reviewer_backend(ctx, "runs list", server=server, token_file=token_file, reviewer=None)
    runs = backend.parked_runs(statuses=tuple(status or ParkedRunStatus), framework=framework)
    if as_json:
        print_json(list_json([parked_run_json(r) for r in runs]))
    else:
        print_parked_runs(runs)


@runs_app.command("show")
def show_run(
    ctx: typer.Context,
    given: ParkedId,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one parked run and the status of each of its requests (never the SDK state itself).

    Lists the calls marked applied whose outcome was never recorded: a kill between the mark and the tool
    leaves one, and it may or may not have run (never twice).
    """
    backend = reviewer_backend(ctx, "runs show", server=server, token_file=token_file, reviewer=None)
    detail = backend.run_detail(parked_id(backend, given))
    missing = set(detail.applied_without_outcome)
    if as_json:
        state = {"state_pruned": detail.state_bytes == 0, "state_bytes": detail.state_bytes}
        statuses = [_request_json(r, recorded=r.id not in missing) for r in detail.requests]
        print_json(
            {
                **parked_run_json(detail.parked),
                **state,
                "requests": statuses,
                "applied_without_outcome": detail.applied_without_outcome,
            }
        )
    else:
        print_parked_run(detail.parked, detail.requests, detail.state_bytes)
        for request in (r for r in detail.requests if r.id in missing):
            applied = request.applied_at.strftime("%Y-%m-%d %H:%M:%S") if request.applied_at else "an unknown time"
            say(f"{request.id} ({request.call.tool}): {UNRECORDED.format(applied=applied)}")


UNRECORDED = "applied at {applied}, no outcome recorded: may or may not have run"
"""What ``runs show`` says of a call marked applied whose outcome never came (a kill between the mark and the tool)."""


def _request_json(request: ApprovalRequest, *, recorded: bool) -> dict[str, Any]:
    # Only an applied approval or edit may have run the tool; for any other request the question does not arise.
    runs_tool = request.status is RequestStatus.APPLIED and request.approved_fingerprint() is not None
    return {
        "id": request.id,
        "status": request.status.value,
        "applied_at": request.applied_at.isoformat() if request.applied_at else None,
        "outcome_recorded": recorded if runs_tool else None,
    }


@runs_app.command("retry")
def retry_run(
    ctx: typer.Context,
    given: ParkedId,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Offer a failed run for resuming again; calls its failed attempt applied never run twice."""
    backend = reviewer_backend(ctx, "runs retry", server=server, token_file=token_file, reviewer=reviewer)
    retried = backend.retry_run(parked_id(backend, given))
    if as_json:
        print_json(parked_run_json(retried))
    else:
        say(f"parked run {retried.id} is parked again; a worker or resume() takes it once its requests are decided")


_DURATION = re.compile(r"([0-9]+)([mhd])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}
MAX_DURATION = timedelta(days=36500)
"""A century: longer ago than that, nothing was stored."""


def parse_duration(value: str) -> timedelta:
    """``30m``, ``12h`` or ``7d`` as a timedelta; a usage error for anything else, zero included."""
    match = _DURATION.fullmatch(value)
    if match is None:
        raise typer.BadParameter(f"expected minutes, hours or days such as 30m, 12h or 7d, got {value!r}")
    if int(match[1]) == 0:
        raise typer.BadParameter(f"must be more than zero, got {value!r}")
    if len(match[1]) > 9 or (duration := timedelta(**{_UNITS[match[2]]: int(match[1])})) > MAX_DURATION:
        shown = value if len(value) <= 30 else value[:20] + "…"
        raise typer.BadParameter(f"{shown!r} is longer than a date can reach (at most {MAX_DURATION.days} days)")
    return duration


OlderThan = Annotated[
    timedelta,
    typer.Option(
        "--older-than",
        metavar="DURATION",
        parser=parse_duration,
        help="Prune runs that ended longer ago than this: 30m, 12h, 7d.",
    ),
]


@runs_app.command("prune")
def prune_runs(
    ctx: typer.Context,
    older_than: OlderThan,
    include_failed: Annotated[
        bool, typer.Option("--include-failed", help="Failed runs too; a failed run pruned can no longer be retried.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be pruned; change nothing.")] = False,
    reviewer: Annotated[
        str | None,
        typer.Option("--reviewer", metavar="NAME", help="Who prunes, for the audit log. [default: the OS user]"),
    ] = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Drop the SDK state of runs resumed (or failed) long ago, which nothing reads again; run it daily.

    On a review server it takes an admin's token.
    """
    backend = reviewer_backend(ctx, "runs prune", server=server, token_file=token_file, reviewer=reviewer)
    runs = backend.prune_runs(older_than=older_than, include_failed=include_failed, dry_run=dry_run)
    if as_json:
        print_json(pruned_json(runs, dry_run=dry_run, older_than=older_than))
    else:
        print_pruned(runs, dry_run=dry_run)


def register(app: typer.Typer) -> None:
    """Add ``runs`` to ``app``."""
    app.add_typer(runs_app)

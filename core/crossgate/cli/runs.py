"""``crossgate runs``: parked runs (paused SDK runs waiting for decisions): list, show, retry a failed one."""

from __future__ import annotations

from typing import Annotated

import typer

from crossgate.cli.context import queue_of, reviewer_name
from crossgate.cli.options import JsonFlag, Reviewer
from crossgate.cli.output import parked_run_json, print_json, print_parked_run, print_parked_runs, say
from crossgate.model import ParkedRunStatus

runs_app = typer.Typer(name="runs", help="Parked runs: paused SDK runs waiting for decisions, and their resumes.")

ParkedId = Annotated[str, typer.Argument(metavar="ID", help="The parked run's id (park_…).")]


@runs_app.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[
        list[ParkedRunStatus] | None,
        typer.Option("--status", help="Only runs with this status (repeatable). [default: every status]"),
    ] = None,
    framework: Annotated[str | None, typer.Option("--framework", metavar="NAME", help="Only this framework.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List parked runs, oldest first: status, requests, resume attempts, lease and outcome."""
    runs = queue_of(ctx).parked_runs(statuses=tuple(status or ParkedRunStatus), framework=framework)
    if as_json:
        print_json([parked_run_json(r) for r in runs])
    else:
        print_parked_runs(runs)


@runs_app.command("show")
def show_run(ctx: typer.Context, parked_id: ParkedId, as_json: JsonFlag = False) -> None:
    """Show one parked run and the status of each of its requests (never the SDK state itself)."""
    queue = queue_of(ctx)
    parked = queue.get_parked(parked_id)
    requests = [queue.get(r) for r in parked.request_ids]
    if as_json:
        print_json({**parked_run_json(parked), "requests": [{"id": r.id, "status": r.status.value} for r in requests]})
    else:
        print_parked_run(parked, requests)


@runs_app.command("retry")
def retry_run(ctx: typer.Context, parked_id: ParkedId, reviewer: Reviewer = None, as_json: JsonFlag = False) -> None:
    """Offer a failed run for resuming again; calls its failed attempt applied never run twice."""
    retried = queue_of(ctx).retry_parked(parked_id, actor=reviewer_name(reviewer))
    if as_json:
        print_json(parked_run_json(retried))
    else:
        say(f"parked run {retried.id} is parked again; a worker or resume() takes it once its requests are decided")


def register(app: typer.Typer) -> None:
    """Add ``runs`` to ``app``."""
    app.add_typer(runs_app)

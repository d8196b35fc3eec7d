"""The audit log: ``crossgate events`` and ``crossgate audit verify``."""

from __future__ import annotations

from typing import Annotated

import typer

from crossgate.cli.context import queue_of
from crossgate.cli.exit_codes import FAILURE, one_line
from crossgate.cli.ids import RequestOption
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import event_json, list_json, print_events, print_json, say
from crossgate.display import visible
from crossgate.limits import MAX_INT64

audit_app = typer.Typer(name="audit", help="Check the hash-chained audit log.")


def events(
    ctx: typer.Context,
    request_id: RequestOption = None,
    after: Annotated[
        int,
        typer.Option("--after", metavar="SEQ", min=0, max=MAX_INT64, help="Only events after this sequence number."),
    ] = 0,
    limit: Annotated[
        int | None, typer.Option("--limit", metavar="N", min=1, max=MAX_INT64, help="At most this many events.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the audit log in order."""
    queue = queue_of(ctx)
    if request_id is not None:
        queue.get(request_id)  # an unknown id is an error, not an empty log
    found = queue.events(after=after, limit=limit, request_id=request_id)
    if as_json:
        more = limit is not None and len(found) == limit and found
        print_json(list_json([event_json(e) for e in found], str(found[-1].seq) if more else None))
    else:
        print_events(found)


@audit_app.command("verify")
def verify(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Check the hash chain: exit 0 if intact, 1 if an event was changed, removed or reordered."""
    report = queue_of(ctx).verify_audit()
    if as_json:
        print_json({"ok": report.ok, "checked": report.checked, "problem": report.problem, "bad_seq": report.bad_seq})
    elif report.ok:
        say(f"audit log intact: {report.checked} events verified")
    if not report.ok:
        typer.echo(f"crossgate: audit log tampered: {visible(one_line(report.problem or 'unknown problem'))}", err=True)
        raise typer.Exit(FAILURE)


def register(app: typer.Typer) -> None:
    """Add ``events`` and ``audit`` to ``app``."""
    app.command("events")(events)
    app.add_typer(audit_app)

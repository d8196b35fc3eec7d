"""The audit log: ``crossgate events``, ``crossgate audit verify`` (``checkpoint`` is in ``cli.checkpoints``).

Both work on a review server too. ``audit verify`` then reads the server's events, head, checkpoints and
policy versions, and checks them here, against the keys given in ``--authority``: it trusts no answer of
the server's, so a server (or a writer of its store) that rewrote the log is caught as a local check would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crossgate.audit import verify_log
from crossgate.authority import TrustedKeys
from crossgate.checkpoints import read_exported, verify_signed_log
from crossgate.cli.deciding import ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.exit_codes import FAILURE, one_line
from crossgate.cli.ids import RequestOption
from crossgate.cli.ids import request_id as resolve_request_id
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import event_json, list_json, print_events, print_json, say
from crossgate.display import visible
from crossgate.errors import ConfigurationError
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
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the audit log in order."""
    backend = reviewer_backend(ctx, "events", server=server, token_file=token_file, reviewer=None)
    if request_id is not None:
        request_id = backend.get(resolve_request_id(backend, request_id)).id  # an unknown id is an error
    found = backend.events(after=after, limit=limit, request_id=request_id)
    if as_json:
        more = limit is not None and len(found) == limit and found
        print_json(list_json([event_json(e) for e in found], str(found[-1].seq) if more else None))
    else:
        print_events(found)


@audit_app.command("verify")
def verify(
    ctx: typer.Context,
    authority: Annotated[
        str | None,
        typer.Option(
            "--authority",
            metavar="PUBKEY|FILE",
            help="Also check the signed checkpoints with this public key (pin text, or a pin or keyring file).",
        ),
    ] = None,
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            "--checkpoint",
            metavar="FILE",
            dir_okay=False,
            help="A checkpoint exported by 'crossgate audit checkpoint' (catches a cut or reset log); repeatable.",
        ),
    ] = None,
    since: Annotated[
        int,
        typer.Option("--since", metavar="SEQ", min=0, max=MAX_INT64, help="Events up to SEQ predate the authority."),
    ] = 0,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Check the hash chain: exit 0 if intact, 1 if an event was changed, removed or reordered.

    With --authority, also every signed checkpoint (and each exported one): exit 1 if one does not verify,
    covers an event that is gone or hashes otherwise, or a decision, approval, standing rule or policy
    version has no checkpoint signed by the process that wrote it. On a review server the log is read
    from it and checked here.
    """
    if authority is None and (checkpoint or since):
        raise typer.BadParameter("--checkpoint and --since need --authority", param_hint="'--authority'")
    trusted = pinned_keys(authority) if authority is not None else None
    exported = [read_exported(_read(path), source=str(path)) for path in checkpoint or ()]
    log = reviewer_backend(ctx, "audit verify", server=server, token_file=token_file, reviewer=None).audit_log()
    report = verify_log(log) if trusted is None else verify_signed_log(log, trusted, exported=exported, since=since)
    if as_json:
        data = {"ok": report.ok, "checked": report.checked, "problem": report.problem, "bad_seq": report.bad_seq}
        if authority is not None:
            data |= {"checkpoints": report.checkpoints, "anchored_at": report.anchored_at}
        print_json(data)
    elif report.ok:
        signed = f"; {report.checkpoints} signed checkpoint(s), up to event {report.anchored_at}" if authority else ""
        say(f"audit log intact: {report.checked} events verified{signed}")
    if not report.ok:
        typer.echo(f"crossgate: audit log tampered: {visible(one_line(report.problem or 'unknown problem'))}", err=True)
        raise typer.Exit(FAILURE)


def pinned_keys(given: str) -> TrustedKeys:
    """``--authority``: the name of a pin or keyring file, else pin text itself."""
    path = Path(given)
    try:
        is_file = path.is_file()
    except OSError:  # a pin text too long to be a file name
        is_file = False
    return TrustedKeys.from_file(path) if is_file else TrustedKeys.parse(given)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the checkpoint file {path}: {exc}") from None


def register(app: typer.Typer) -> None:
    """Add ``events`` and ``audit`` to ``app``."""
    app.command("events")(events)
    app.add_typer(audit_app)

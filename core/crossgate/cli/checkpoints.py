"""``crossgate audit checkpoint``: export the latest signed head of the audit log outside the database.

With the operator's key (:mod:`crossgate.cli.operator`) the command signs the current head first, once
its chain checks out; without it, it exports the newest checkpoint the store holds (signed by the server,
or after a decision), verified with the keys this command trusts when it has any. The checkpoint goes to
standard output (``-``, for a log shipper), a file (written whole, then renamed into place) or a webhook
(an HTTP POST of the same JSON). Keep it where a writer of the database cannot reach it; ``crossgate audit
verify --authority KEY --checkpoint FILE`` then catches a cut or reset log.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from crossgate.checkpoints import Checkpointer, export_checkpoint
from crossgate.cli.audit import audit_app
from crossgate.cli.context import CliContext
from crossgate.cli.deciding import local_only
from crossgate.cli.operator import AuthorityDirOpt
from crossgate.display import visible
from crossgate.errors import ConfigurationError, NotFoundError, SignatureError
from crossgate.stores.base import Checkpoint

WEBHOOK_TIMEOUT_SECONDS = 10


@audit_app.command("checkpoint")
def checkpoint(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(metavar="[-]", help="'-': standard output (the default).")] = "-",
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", dir_okay=False, help="Write it to FILE instead.")
    ] = None,
    webhook: Annotated[str | None, typer.Option("--webhook", metavar="URL", help="POST it to URL instead.")] = None,
    directory: AuthorityDirOpt = None,
) -> None:
    """Export the latest signed checkpoint of the audit log (signing the head first when the key is here)."""
    if target != "-":
        raise typer.BadParameter(f"expected '-' (standard output), got {target!r}", param_hint="'[-]'")
    if out is not None and webhook is not None:
        raise typer.BadParameter("give --out or --webhook, not both", param_hint="'--out'")
    local_only(ctx, "audit checkpoint", "it signs the head with the key on this machine, or reads the store's newest")
    state = ctx.ensure_object(CliContext)
    if directory is not None:
        state.key_dir = directory
    found = _latest(state)
    text = export_checkpoint(found)
    if out is not None:
        _write(out, text)
        _note(f"checkpoint of event {found.seq} written to {out}")
    elif webhook is not None:
        _post(webhook, text)
        _note(f"checkpoint of event {found.seq} sent to {webhook}")
    else:
        typer.echo(text)


def _latest(state: CliContext) -> Checkpoint:
    """The head signed now (with the key), else the newest stored checkpoint that verifies."""
    queue = state.open_queue()
    keys = state.keys()
    if keys.authority is not None:
        return Checkpointer(queue.store, keys.authority, trusted=keys.trusted, clock=queue.now).sign_head()
    stored = queue.store.list_checkpoints()
    if not stored:
        raise NotFoundError(
            "the store holds no signed checkpoint yet: run this where the authority's key is, or run crossgate serve "
            "with it"
        )
    if keys.trusted is None:
        _note("the checkpoint is exported unverified: no authority public key is pinned here")
        return stored[-1]
    for candidate in reversed(stored):
        try:
            keys.trusted.verify_checkpoint(candidate.token)
        except SignatureError as exc:
            _note(f"skipping the stored checkpoint of event {candidate.seq}: {exc}")
            continue
        return candidate
    raise NotFoundError("no stored checkpoint verifies with the pinned keys: the store's checkpoints were replaced")


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ConfigurationError(f"cannot write the checkpoint to {path}: {exc.strerror or exc}") from None


def _post(url: str, text: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise typer.BadParameter(f"expected an http:// or https:// URL, got {url!r}", param_hint="'--webhook'")
    request = urllib.request.Request(
        url, data=text.encode("utf-8"), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigurationError(f"cannot send the checkpoint to {url}: {reason}") from None
    if not 200 <= status < 300:
        raise ConfigurationError(f"the webhook {url} answered HTTP {status}; the checkpoint was not taken")


def _note(message: str) -> None:
    typer.echo(f"crossgate: {visible(message)}", err=True)


def register(app: typer.Typer) -> None:
    """The command is on ``audit_app`` (added to ``app`` by ``crossgate.cli.audit``)."""

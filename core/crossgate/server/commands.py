"""``crossgate serve`` and ``crossgate worker``, added to the CLI by ``register(app)``.

Everything heavy is imported inside the command bodies, so ``crossgate --help`` works without the
server extra, and a missing extra gives one line with the install hint.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from crossgate.authority.keyring import KEYRING_FILE, Keyring, default_directory
from crossgate.authority.keys import Authority
from crossgate.errors import ConfigurationError
from crossgate.limits import InputLimits
from crossgate.queue import ReviewQueue

if TYPE_CHECKING:
    from crossgate.checkpoints import CheckpointTimer

DEFAULT_PORT = 8700
DEFAULT_CHECKPOINT_SECONDS = 60.0
LOCAL_REVIEWER = "local"
UNSIGNED_WARNING = (
    "crossgate: warning: no authority key (create one with 'crossgate keys init'), so decisions are recorded "
    "unsigned; agents that pin a public key refuse them"
)

PRIVATE_RECEIVERS_WARNING = (
    "crossgate: warning: AAP webhook receivers may be plain-HTTP, loopback or private addresses "
    "(aap_webhook_allow_private)"
)


def server_authority(directory: Path | None) -> Authority | None:
    """The key the server signs with: the keyring in ``directory``, which must hold one (a mistyped
    ``--authority-dir`` is an error); else the default directory's (``$CROSSGATE_AUTHORITY_DIR``, else
    ``~/.config/crossgate/authority``) when it holds a keyring, else None: the server signs nothing."""
    if directory is not None:
        return Keyring.open(directory).authority()
    target = default_directory()
    return Keyring.open(target).authority() if (target / KEYRING_FILE).exists() else None


def _context_queue(
    ctx: typer.Context, db: str | None, policy: str | None, limits: InputLimits | None = None
) -> ReviewQueue:
    from crossgate.cli.context import CliContext

    state = ctx.obj if isinstance(ctx.obj, CliContext) else CliContext()
    if state.queue is None:
        state.db = db or state.db
        state.policy = policy or state.policy
        state.limits = limits or state.limits
    ctx.obj = state
    return state.open_queue()


def _need_server_extra() -> None:
    from crossgate.server import require_server_extra

    try:
        require_server_extra()
    except ImportError as exc:
        raise ConfigurationError(str(exc)) from None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option(help="Interface to bind; anything but loopback exposes the queue.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port.")] = DEFAULT_PORT,
    db: Annotated[str | None, typer.Option("--db", metavar="URL", help="Database (overrides the global --db).")] = None,
    policy: Annotated[str | None, typer.Option("--policy", metavar="FILE", help="Policy file.")] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Reviewers (and webhooks) in TOML or YAML. [default: $CROSSGATE_TOKENS]"),
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="Address that links in notifications use.")] = None,
    webhook: Annotated[list[str] | None, typer.Option(metavar="URL", help="Notify this URL; repeatable.")] = None,
    webhook_format: Annotated[str, typer.Option(help="json or slack, for --webhook.")] = "json",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the review page in a browser.")] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    authority_dir: Annotated[
        Path | None,
        typer.Option(
            "--authority-dir",
            metavar="DIR",
            file_okay=False,
            help="The authority's key directory: every decision and rule is signed with its key. "
            "[default: $CROSSGATE_AUTHORITY_DIR, else ~/.config/crossgate/authority, if it holds a keyring]",
        ),
    ] = None,
    checkpoint_every: Annotated[
        float,
        typer.Option(
            min=1,
            max=86400,
            metavar="SECONDS",
            callback=_finite,
            help="Sign the audit log's head this often, when it moved (needs the authority's key).",
        ),
    ] = DEFAULT_CHECKPOINT_SECONDS,
    aap_webhook_allow_private: Annotated[
        bool,
        typer.Option(
            "--aap-webhook-allow-private",
            help="Let AAP receivers be plain-HTTP, loopback or private addresses: for tests and closed networks.",
        ),
    ] = False,
) -> None:
    """Run the review server: HTTP API, live stream and the reviewer web page.

    With the authority's keyring (``crossgate keys init``), the server signs every decision and standing
    rule it records, under the authenticated reviewer's name (agents verify them with the public key), an
    audit checkpoint after each decision and, on a timer, of the log's head.
    """
    _need_server_extra()
    import uvicorn

    from crossgate.server.app import create_app
    from crossgate.server.settings import (
        ServerSettings,
        WebhookTarget,
        load_config,
        reviewer,
        reviewers_from_env,
        secret_from_env,
    )

    if webhook_format not in ("json", "slack"):
        raise typer.BadParameter("use json or slack", param_hint="'--webhook-format'")
    fields: dict[str, Any] = load_config(tokens) if tokens else {"reviewers": reviewers_from_env()}
    generated = None
    if not fields["reviewers"]:
        generated = secrets.token_urlsafe(18)
        fields["reviewers"] = (reviewer(LOCAL_REVIEWER, generated),)
    if "secret" not in fields and (secret := secret_from_env()) is not None:
        fields["secret"] = secret
    shown_host = host if _is_loopback(host) or host not in ("0.0.0.0", "::") else "127.0.0.1"
    address = f"http://[{shown_host}]:{port}" if ":" in shown_host else f"http://{shown_host}:{port}"
    fields["base_url"] = base_url or fields.get("base_url") or address
    fmt: Literal["json", "slack"] = "slack" if webhook_format == "slack" else "json"
    extra = tuple(WebhookTarget(url=url, format=fmt) for url in webhook or ())
    fields["webhooks"] = (*fields.get("webhooks", ()), *extra)
    if aap_webhook_allow_private:
        fields["aap_webhook_allow_private"] = True
    limits = fields.pop("limits", None)
    settings = ServerSettings(**fields)
    authority = server_authority(authority_dir)
    queue = _context_queue(ctx, db, policy, limits)
    if queue.authority is None:
        queue.authority = authority
    app = create_app(queue, settings)
    page = f"{address}/"
    if generated:  # the printed address signs in once; the token stays for the API and the sign-in form
        page = f"{address}/login?token={app.state.crossgate.auth.issue_sign_in(LOCAL_REVIEWER)}"
    typer.echo(f"crossgate: review server on {address} ({type(queue.store).__name__})")
    if generated:
        typer.echo(f"crossgate: no reviewers configured; sign in as {LOCAL_REVIEWER!r} once at this address:")
    typer.echo(f"crossgate: review page {page}")
    if generated:
        typer.echo(f"crossgate: {LOCAL_REVIEWER!r}'s token, for the API and to sign in again: {generated}")
    if queue.authority is not None:
        typer.echo(f"crossgate: signing decisions and standing rules with authority key {queue.authority.kid}")
    else:
        typer.echo(UNSIGNED_WARNING, err=True)
    if settings.aap_webhook_allow_private:
        typer.echo(PRIVATE_RECEIVERS_WARNING, err=True)
    if not _is_loopback(host):
        typer.echo(f"crossgate: warning: listening on {host}, reachable from other machines", err=True)
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, [page]).start()
    timer = _checkpoint_timer(queue, checkpoint_every)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=2)
    finally:
        if timer is not None:
            timer.stop()


def _checkpoint_timer(queue: ReviewQueue, every: float) -> CheckpointTimer | None:
    """Start signing the head every ``every`` seconds when the queue holds the key; say so either way."""
    from crossgate.checkpoints import CheckpointTimer

    if queue.checkpointer is None:
        typer.echo(
            "crossgate: no authority key here: audit checkpoints are not signed (crossgate keys init creates one)",
            err=True,
        )
        return None
    timer = CheckpointTimer(queue.checkpointer, every)
    timer.start()
    kid = queue.checkpointer.authority.kid
    typer.echo(f"crossgate: signing audit checkpoints with key {kid}, every {every:g} s while the log moves")
    return timer


def _finite(value: float) -> float:
    if not math.isfinite(value):  # click's range lets NaN through: every comparison with it is false
        raise typer.BadParameter(f"must be a number of seconds, got {value}")
    return value


def worker(
    ctx: typer.Context,
    app_target: Annotated[
        list[str],
        typer.Option(
            "--app",
            metavar="MODULE:ATTR",
            help="Resumers from your code: a resumer, a list, or a callable taking the queue; repeatable.",
        ),
    ],
    db: Annotated[str | None, typer.Option("--db", metavar="URL", help="Database (overrides the global --db).")] = None,
    policy: Annotated[str | None, typer.Option("--policy", metavar="FILE", help="Policy file.")] = None,
    poll: Annotated[
        float,
        typer.Option(
            min=0.05, max=3600, callback=_finite, help="Seconds between checks when nothing wakes the worker."
        ),
    ] = 1.0,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="Exit once no parked run is left.")] = False,
    once: Annotated[bool, typer.Option("--once", help="Resume what is ready now, then exit.")] = False,
) -> None:
    """Resume parked runs (any adapter) as soon as their requests are decided."""
    from crossgate.server.worker import Resumed, Worker, load_resumers

    queue = _context_queue(ctx, db, policy)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # --app names modules of the current project, like uvicorn does
    resumers = [r for target in app_target for r in load_resumers(target, queue)]

    def report(result: Resumed) -> None:
        typer.echo(f"{result.outcome:<9} {result.framework} run {result.run} ({result.parked_run}) {result.detail}")

    runner = Worker(queue, resumers, poll_seconds=poll, report=report)
    frameworks = ", ".join(sorted(runner.resumers))
    typer.echo(f"crossgate worker: resuming {frameworks} runs from {type(queue.store).__name__}", err=True)
    try:
        if once:
            asyncio.run(runner.run_once())
        else:
            asyncio.run(runner.run(until_idle=until_idle))
    except KeyboardInterrupt:
        typer.echo("crossgate worker: stopped", err=True)


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``worker`` to the ``crossgate`` command."""
    app.command("serve")(serve)
    app.command("worker")(worker)

"""``crossgate serve`` and ``crossgate worker``, added to the CLI by ``register(app)``.

Everything heavy is imported inside the command bodies, so ``crossgate --help`` works without the
server extra, and a missing extra gives one line with the install hint.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from crossgate.authority.keyring import KEYRING_FILE, Keyring, default_directory
from crossgate.authority.keys import Authority
from crossgate.cli.context import CliContext, os_user
from crossgate.datadir import DATA_DIR_ENV, data_database, data_directory, key_directory
from crossgate.errors import ConfigurationError
from crossgate.limits import DEFAULT_LIMITS, InputLimits
from crossgate.queue import ReviewQueue
from crossgate.server.setup import (
    FIRST_ADMIN,
    SetupReport,
    first_credentials,
    first_policy,
    open_keyring,
    write_default_pin,
)
from crossgate.stores import resolve_db

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
    webhook_format: Annotated[str, typer.Option(help="json, slack or teams, for --webhook.")] = "json",
    slack_channel: Annotated[
        str | None,
        typer.Option(
            metavar="CHANNEL_ID",
            help="Run the Slack app, posting to this channel id; the bot token and signing secret come from "
            "--slack-*-file or $CROSSGATE_SLACK_BOT_TOKEN and $CROSSGATE_SLACK_SIGNING_SECRET.",
        ),
    ] = None,
    slack_bot_token_file: Annotated[
        Path | None, typer.Option(metavar="FILE", help="File holding the Slack bot token (xoxb-…).")
    ] = None,
    slack_signing_secret_file: Annotated[
        Path | None, typer.Option(metavar="FILE", help="File holding the Slack app's signing secret.")
    ] = None,
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
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            envvar=DATA_DIR_ENV,
            show_envvar=True,
            file_okay=False,
            help="Where the server keeps its database, keys and first-run output, unless --db or "
            "--authority-dir say otherwise. [default: ~/.local/share/crossgate]",
        ),
    ] = None,
    metrics_token_env: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Environment variable holding the bearer token GET /metrics requires. [default: loopback only]",
        ),
    ] = None,
    aap_webhook_allow_private: Annotated[
        bool,
        typer.Option(
            "--aap-webhook-allow-private",
            help="Let AAP receivers be plain-HTTP, loopback or private addresses: for tests and closed networks.",
        ),
    ] = False,
) -> None:
    """Run the review server: HTTP API, live stream and the reviewer web page.

    The first run sets itself up: the authority's keys (unless a key directory holds some), an admin and
    an agent credential, the pin at the default path, and ``--policy`` as signed version 1; it prints once
    what an agent needs (docs/server.md, "First run"). The server signs every decision and standing rule
    it records, under the authenticated reviewer's name, an audit checkpoint after each decision and, on a
    timer, of the log's head. With ``--db memory:`` nothing is set up or kept.
    """
    _need_server_extra()
    import uvicorn

    from crossgate.server.app import create_app
    from crossgate.server.settings import ServerSettings, metrics_token, reviewer

    if webhook_format not in ("json", "slack", "teams"):
        raise typer.BadParameter("use json, slack or teams", param_hint="'--webhook-format'")
    fields, limits = _settings_fields(tokens, host, port, base_url, webhook, webhook_format)
    if slack_channel is not None:
        if "slack" in fields:
            raise typer.BadParameter("the --tokens file has a [slack] table already", param_hint="'--slack-channel'")
        fields["slack"] = _slack_from_options(slack_channel, slack_bot_token_file, slack_signing_secret_file)
    elif slack_bot_token_file or slack_signing_secret_file:
        raise typer.BadParameter("give the channel too", param_hint="'--slack-channel'")
    if metrics_token_env is not None:
        fields["metrics_token_sha256"] = metrics_token(os.environ, metrics_token_env, "--metrics-token-env: ")
    state = ctx.obj if isinstance(ctx.obj, CliContext) else CliContext()
    data = data_directory(data_dir)
    target = resolve_db(db or state.db) if (db or state.db) else data_database(data)
    kept = not (target in ("memory:", ":memory:") or state.queue is not None)
    generated = None
    if not kept and not fields["reviewers"]:  # nothing is kept: a reviewer for this process only
        generated = secrets.token_urlsafe(18)
        fields["reviewers"] = (reviewer(LOCAL_REVIEWER, generated),)
    if aap_webhook_allow_private:
        fields["aap_webhook_allow_private"] = True
    settings = ServerSettings(**fields)
    report = SetupReport()
    if not kept:
        queue = _context_queue(ctx, target, policy, limits)
        if queue.authority is None:
            queue.authority = server_authority(authority_dir)
        app = create_app(queue, settings)
    else:
        queue, keyring = _set_up(
            target, data, authority_dir, policy or state.policy, limits, report, settings.state_head_file
        )
        try:
            app = create_app(queue, settings, credential_keys=keyring.trusted_keys())
            first_credentials(
                app.state.crossgate.auth.credentials,
                keyring=keyring,
                server_url=settings.base_url,
                data=data,
                actor=os_user(),
                taken=settings,
                report=report,
            )
            write_default_pin(keyring, report)
            _warn_unverified(app.state.crossgate.auth.credentials, report)
        except BaseException:
            queue.close()
            raise
    try:
        _announce(app, queue, host, generated, report, open_browser)
        timer = _checkpoint_timer(queue, checkpoint_every)
        try:
            uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=2)
        finally:
            if timer is not None:
                timer.stop()
    finally:
        if kept:
            queue.close()


def _warn_unverified(credentials: Any, report: SetupReport) -> None:
    """A note naming the stored credentials this server's keys do not verify (another key signed them)."""
    if credentials is None:
        return
    refused = [f"{c.kind} {c.name}" for c in credentials.list() if not credentials.verifies(c)]
    if refused:
        report.notes.append(
            f"crossgate: warning: {', '.join(refused)}: stored, but not signed by this server's keys; refused "
            "(every server on one database needs the same keyring)"
        )


def _settings_fields(
    tokens: Path | None, host: str, port: int, base_url: str | None, webhook: list[str] | None, webhook_format: str
) -> tuple[dict[str, Any], InputLimits | None]:
    """Keyword arguments for the server's settings from the tokens file (or ``$CROSSGATE_TOKENS``), and its limits."""
    from crossgate.server.settings import WebhookTarget, load_config, reviewers_from_env, secret_from_env

    fields: dict[str, Any] = load_config(tokens) if tokens else {"reviewers": reviewers_from_env()}
    if "secret" not in fields and (secret := secret_from_env()) is not None:
        fields["secret"] = secret
    fields["base_url"] = base_url or fields.get("base_url") or _address(host, port)
    formats: dict[str, Literal["json", "slack", "teams"]] = {"json": "json", "slack": "slack", "teams": "teams"}
    fmt = formats[webhook_format]
    extra = tuple(WebhookTarget(url=url, format=fmt) for url in webhook or ())
    fields["webhooks"] = (*fields.get("webhooks", ()), *extra)
    return fields, fields.pop("limits", None)


def _announce(
    app: Any, queue: ReviewQueue, host: str, generated: str | None, report: SetupReport, open_browser: bool
) -> None:
    """Say where the server is, who signs in how, what the first run set up, and what it signs with."""
    settings = app.state.crossgate.settings
    address = settings.base_url.rstrip("/")
    page = f"{address}/"
    signs_in = LOCAL_REVIEWER if generated else (FIRST_ADMIN if report.admin_token else None)
    if signs_in:  # the printed address signs in once; the token stays for the API and the sign-in form
        page = f"{address}/login?token={app.state.crossgate.auth.issue_sign_in(signs_in)}"
    typer.echo(f"crossgate: review server on {address} ({type(queue.store).__name__})")
    for line in report.lines:
        typer.echo(line)
    for note in report.notes:
        typer.echo(note, err=True)
    if generated:
        typer.echo(f"crossgate: no reviewers configured; sign in as {LOCAL_REVIEWER!r} once at this address:")
    elif signs_in:
        typer.echo(f"crossgate: sign in as {FIRST_ADMIN!r} once at this address:")
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


def _address(host: str, port: int) -> str:
    shown_host = host if _is_loopback(host) or host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://[{shown_host}]:{port}" if ":" in shown_host else f"http://{shown_host}:{port}"


def _set_up(
    target: str,
    data: Path,
    authority_dir: Path | None,
    policy_file: str | None,
    limits: InputLimits | None,
    report: SetupReport,
    head_file: str | None = None,
) -> tuple[ReviewQueue, Keyring]:
    """The queue on ``target`` under the store's signed policy, with the keyring (made on a first run) and
    ``policy_file`` applied as version 1 when the store has none."""
    from crossgate.policy import load_policy
    from crossgate.stores import open_store

    key_dir, named = key_directory(data, authority_dir)
    keyring = open_keyring(key_dir, named=named, data=data, report=report)
    if target == data_database(data):
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
    store = open_store(target)
    try:
        if policy_file:
            first_policy(store, keyring, load_policy(policy_file), policy_file, actor=os_user(), report=report)
        from crossgate.adapter._heads import default_signer_file

        authority = keyring.authority()
        queue = ReviewQueue(
            store,
            None,
            limits=limits or DEFAULT_LIMITS,
            authority=authority,
            trusted=keyring.trusted_keys(),
            head_file=head_file or default_signer_file(authority.kid),  # read before the first head is signed
        )
    except BaseException:
        store.close()
        raise
    return queue, keyring


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


def _slack_from_options(channel: str, token_file: Path | None, secret_file: Path | None) -> Any:
    """The Slack app's settings from ``crossgate serve``'s options: secrets from files or the environment."""
    from crossgate.server.channels.config import (
        SLACK_BOT_TOKEN_ENV,
        SLACK_SIGNING_SECRET_ENV,
        SlackSettings,
        read_secret_file,
    )

    token = (
        read_secret_file(token_file, "--slack-bot-token-file") if token_file else os.environ.get(SLACK_BOT_TOKEN_ENV)
    )
    secret = (
        read_secret_file(secret_file, "--slack-signing-secret-file")
        if secret_file
        else os.environ.get(SLACK_SIGNING_SECRET_ENV)
    )
    if not token or not secret:
        raise ConfigurationError(
            f"the Slack app needs a bot token and a signing secret: --slack-bot-token-file or ${SLACK_BOT_TOKEN_ENV}, "
            f"--slack-signing-secret-file or ${SLACK_SIGNING_SECRET_ENV}"
        )
    return SlackSettings(channel=channel, bot_token=token, signing_secret=secret)


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

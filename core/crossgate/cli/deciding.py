"""Where a reviewer's command works, and with what credentials: a review server, or the local database.

The reading and deciding commands (``list``, ``show``, ``review``, ``events``, ``rules``, ``runs``,
``cancel``, ``approve``, ``edit``, ``reject``, ``respond``), and the operator's that a server can do with
an admin token (``expire``, ``runs prune``, ``policy apply``) or read for the client to verify (``policy
show|history|diff``, ``audit verify``), each get a :class:`~crossgate.cli.backend.ReviewerBackend` from
:func:`reviewer_backend`, chosen in this order:

1. ``--db`` on the command line: the local database (with ``--server`` too: a usage error);
2. ``--server URL``, else ``$CROSSGATE_SERVER``: that review server;
3. the server of ``crossgate login`` (:mod:`crossgate.cli.config`);
4. the local database, ``$CROSSGATE_DB`` else ``./crossgate.db``.

On a server the reviewer token is ``--token-file FILE``, else ``$CROSSGATE_TOKEN``, else the one
``crossgate login`` stored for that server; the server records the reviewer the token names and signs
for them. On the local database, a command that lets calls run (a decision, ``rules add``) needs the
authority's signing key (the keyring in ``--authority-dir``, ``$CROSSGATE_AUTHORITY_DIR`` or
``~/.config/crossgate/authority``) and decides as an **operator** under ``--reviewer`` (else the OS user).
Without either, the command refuses with one line that says how to decide (exit 6, denied). A queue handed to the CLI
ready-made (tests, embedding) is the local database, and decides with its own authority, if it has one.

``submit``, ``policy replay`` and ``audit checkpoint`` work on a local database only: when a server is
chosen (and no ``--db`` given) they refuse with one line, exit 2 (:func:`local_only`).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import typer

from crossgate.authority.keyring import KEYRING_DIR_ENV, KEYRING_FILE, Keyring, default_directory
from crossgate.cli.backend import LocalBackend, ReviewerBackend
from crossgate.cli.config import read_login
from crossgate.cli.context import CliContext, on_command_line, reviewer_name
from crossgate.errors import ConfigurationError

if TYPE_CHECKING:
    from crossgate.cli.server_backend import ServerBackend

TOKEN_ENV = "CROSSGATE_TOKEN"
"""A reviewer's token for ``--server``."""
HOW_TO_DECIDE = (
    "{command} needs a reviewer's credentials: decide through the server (crossgate login URL, or --server URL "
    f"with a reviewer token in ${TOKEN_ENV} or --token-file FILE), or hold the authority's signing key "
    f"(crossgate keys init; --authority-dir DIR or ${KEYRING_DIR_ENV})"
)
NEEDS_HTTPX = "working against a review server needs httpx: pip install 'crossgate[remote]'"
SERVER_ENV = "CROSSGATE_SERVER"
"""The review server to work against when ``--server`` is not given."""

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        envvar=SERVER_ENV,
        show_envvar=True,
        help="Work against this review server, with a reviewer token. [default: the server of crossgate login, "
        "else the local database]",
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file", metavar="FILE", dir_okay=False, help=f"The reviewer token for --server. [default: ${TOKEN_ENV}]"
    ),
]
AuthorityDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--authority-dir",
        metavar="DIR",
        envvar=KEYRING_DIR_ENV,
        show_envvar=True,
        file_okay=False,
        help="The authority's key directory, to decide as an operator. [default: ~/.config/crossgate/authority]",
    ),
]


class NoCredentialsError(ConfigurationError):
    """A command that lets calls run was given neither a server with a reviewer token nor the signing key."""


class LocalOnlyError(ConfigurationError):
    """A command that works on a local database only was run with a review server chosen (exit 2, usage)."""


def local_only(ctx: typer.Context, command: str, why: str) -> None:
    """LocalOnlyError when a review server is chosen for ``command`` (``$CROSSGATE_SERVER`` or the login)."""
    url = _chosen_server(ctx, os.environ.get(SERVER_ENV) or None)
    if url is not None:
        raise LocalOnlyError(
            f"crossgate {command} works on a local database only ({why}), and the review server {url} is chosen: "
            "give --db, or unset $CROSSGATE_SERVER / crossgate logout"
        )


def reviewer_backend(
    ctx: typer.Context,
    command: str,
    *,
    server: str | None,
    token_file: Path | None,
    reviewer: str | None,
    authority_dir: Path | None = None,
    decides: bool = False,
    reviewer_option: str = "--reviewer",
) -> ReviewerBackend:
    """Where ``command`` works (the order in this module's docstring); ``decides`` needs a credential.

    ``reviewer`` is the command's ``reviewer_option`` (who acts, locally); a server refuses it, as it
    records the reviewer its token names.
    """
    url = _chosen_server(ctx, server)
    if url is None:
        if token_file is not None:
            raise typer.BadParameter("--token-file goes with --server URL", param_hint="'--token-file'")
        if decides:
            return local_decider(ctx, command, authority_dir=authority_dir, reviewer=reviewer)
        return LocalBackend(ctx.ensure_object(CliContext).open_queue(), reviewer_name(reviewer))
    if reviewer is not None:
        raise typer.BadParameter(
            f"the server records the reviewer its token names; leave {reviewer_option} out with --server",
            param_hint=f"'{reviewer_option}'",
        )
    backend = connect(url, _token(url, token_file))
    ctx.call_on_close(backend.close)
    return backend


def _chosen_server(ctx: typer.Context, server: str | None) -> str | None:
    """The review server's URL, or None for the local database."""
    state = ctx.ensure_object(CliContext)
    given = server is not None and on_command_line(ctx, "server")
    if state.db_given:
        if given:
            raise typer.BadParameter("--db and --server name two different queues; give one", param_hint="'--server'")
        return None
    if not given and state.queue is not None and not state.owns_queue:
        return None  # a queue handed over ready-made is the one to work on
    if server is None:
        login = read_login()
        if login is None:
            return None
        server = login.server
    return checked_url(server, "'--server'")


def checked_url(given: str, hint: str) -> str:
    """A review server's base URL; a usage error for anything else (plain http only to this machine)."""
    try:
        url: str = _server_backend().server_url(given)
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from None
    return url


def connect(url: str, token: str) -> ServerBackend:
    """The backend on the review server at ``url`` with a reviewer token (close it when done)."""
    backend: ServerBackend = _server_backend().ServerBackend(url, token)
    return backend


def _server_backend() -> ModuleType:
    try:
        return importlib.import_module("crossgate.cli.server_backend")
    except ModuleNotFoundError as exc:  # the core installs without httpx
        if exc.name != "httpx":
            raise
        raise ConfigurationError(
            "working against a review server needs httpx: pip install 'crossgate[remote]'"
        ) from None


def local_decider(
    ctx: typer.Context, command: str, *, authority_dir: Path | None, reviewer: str | None
) -> LocalBackend:
    """The local queue with the authority's key, deciding as an operator; NoCredentialsError without the key."""
    state = ctx.ensure_object(CliContext)
    queue = state.open_queue()
    how = HOW_TO_DECIDE.format(command=f"crossgate {command}")
    if queue.authority is None and state.owns_queue:
        directory = authority_dir if authority_dir is not None else default_directory()
        if (directory / KEYRING_FILE).exists():
            queue.authority = Keyring.open(directory).authority()
        elif authority_dir is not None:
            raise NoCredentialsError(f"{how}; {directory} holds no keyring")
    if queue.authority is None:
        raise NoCredentialsError(how)
    return LocalBackend(queue, reviewer_name(reviewer))


def read_token_file(token_file: Path) -> str:
    """The token in ``token_file`` (surrounding blanks dropped); ConfigurationError if unreadable or empty."""
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the token file {token_file}: {exc}") from None
    if not token:
        raise ConfigurationError(f"the token file {token_file} is empty")
    return token


def _token(url: str, token_file: Path | None) -> str:
    """``--token-file``, else ``$CROSSGATE_TOKEN``, else the login's token if it was stored for ``url``."""
    if token_file is not None:
        return read_token_file(token_file)
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token and (login := read_login()) is not None and login.server == url:
        token = login.token
    if not token:
        raise NoCredentialsError(
            f"--server needs a reviewer token for {url}: run 'crossgate login {url}', set ${TOKEN_ENV} or pass "
            "--token-file FILE"
        )
    return token

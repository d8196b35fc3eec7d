"""``crossgate login URL``, ``crossgate login --status`` and ``crossgate logout``: the reviewer's server.

The token is read from ``--token-file``, else standard input when it is not a terminal, else a prompt
that does not echo; never from an argument, which would land in the shell's history. It is checked
against the server (``GET /api/me``) before anything is written: a token the server refuses is one line,
and nothing is saved. Afterwards the reading and deciding commands work against that server
(:mod:`crossgate.cli.deciding`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from crossgate.cli.backend import ReviewerTokenRefusedError
from crossgate.cli.config import Login, config_path, read_login, remove_login, write_login
from crossgate.cli.deciding import TokenFileOpt, checked_url, connect, read_token_file
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import print_json, say
from crossgate.errors import ConfigurationError, CrossgateError


class NotLoggedInError(ConfigurationError):
    """``crossgate login --status`` with no stored login."""


class LoginRefusedError(ConfigurationError):
    """The server refused the token (or could not be asked): nothing was saved."""


def _read_token(token_file: Path | None) -> str:
    if token_file is not None:
        token = read_token_file(token_file)
    elif not sys.stdin.isatty():
        token = sys.stdin.readline().strip()
    else:
        token = typer.prompt("reviewer token", hide_input=True).strip()
    if not token:
        raise ConfigurationError("no reviewer token given: nothing saved")
    if not token.isprintable() or any(c.isspace() for c in token):
        raise ConfigurationError("a reviewer token is one word of printable characters: nothing saved")
    return token


def _whoami(server: str, token: str) -> dict[str, Any]:
    backend = connect(server, token)
    try:
        return backend.whoami()
    finally:
        backend.close()


def _show(found: dict[str, Any], server: str, as_json: bool, said: str) -> None:
    if as_json:
        print_json(
            {"server": server, "reviewer": found["name"], "scope": found.get("scope"), "config": str(config_path())}
        )
    else:
        say(f"{said} {server} as {found['name']} (may decide {found.get('scope') or 'everything'})")


def login(
    url: Annotated[str | None, typer.Argument(metavar="URL", help="The review server, https://…")] = None,
    token_file: TokenFileOpt = None,
    status: Annotated[bool, typer.Option("--status", help="Say who you are on which server, and exit.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Log in to a review server: the reading and deciding commands then work against it.

    The reviewer token comes from --token-file, standard input or a prompt, is checked with the server,
    and is kept in an owner-only file ($XDG_CONFIG_HOME/crossgate/config.toml).
    """
    if status:
        if url is not None or token_file is not None:
            raise typer.BadParameter("--status takes no URL and no token", param_hint="'--status'")
        stored = read_login()
        if stored is None:
            raise NotLoggedInError("not logged in to a review server: run crossgate login URL")
        _show(_whoami(stored.server, stored.token), stored.server, as_json, "logged in to")
        return
    if url is None:
        raise typer.BadParameter("give the review server's URL: crossgate login https://…", param_hint="'URL'")
    server = checked_url(url, "'URL'")
    token = _read_token(token_file)
    try:
        found = _whoami(server, token)
    except ReviewerTokenRefusedError:
        raise LoginRefusedError(
            f"the review server at {server} does not accept this reviewer token; nothing saved"
        ) from None
    except CrossgateError as exc:
        raise LoginRefusedError(f"{exc}; nothing saved") from None
    write_login(Login(server=server, token=token))
    _show(found, server, as_json, "logged in to")


def logout(as_json: JsonFlag = False) -> None:
    """Forget the stored login; the commands work against the local database again.

    The token itself stays valid on the server until an operator revokes or rotates it.
    """
    try:
        stored = read_login()
    except ConfigurationError:  # a file others may read, or a malformed one, is removed all the same
        stored = None
    removed = remove_login()
    server = stored.server if stored is not None else None
    if as_json:
        print_json({"server": server, "logged_out": removed, "config": str(config_path())})
    elif removed:
        say(f"logged out{f' of {server}' if server else ''}: removed {config_path()}")
    else:
        say("not logged in")


def register(app: typer.Typer) -> None:
    """Add ``login`` and ``logout`` to ``app``."""
    app.command("login")(login)
    app.command("logout")(logout)

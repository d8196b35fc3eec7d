"""``crossgate reviewers`` and ``crossgate agents``: add, list, rotate and revoke stored credentials.

Run by an operator, on the database directly with the authority's key (``--db``, else the data directory's
database; the key as ``crossgate serve`` finds it), or by an admin reviewer over a server (``--server URL``
with ``$CROSSGATE_TOKEN`` or ``--token-file``; the admin API, docs/server.md). ``add`` and ``rotate`` print
the new token alone on standard output, the only time it is shown; notes go to standard error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer

from crossgate.authority.keyring import Keyring
from crossgate.cli.context import CliContext, os_user, require_database
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import list_json, print_json, say
from crossgate.credentials import Credentials, Scope, check_name, credential_json, parse_scope
from crossgate.datadir import DATA_DIR_ENV, data_database, data_directory, key_directory
from crossgate.display import visible
from crossgate.errors import ConfigurationError, ConflictError, CrossgateError, NotFoundError
from crossgate.state_head import HeadSigner
from crossgate.stores import open_store, resolve_db
from crossgate.stores.credentials import CredentialKind

SERVER_ENV = "CROSSGATE_SERVER"
TOKEN_ENV = "CROSSGATE_TOKEN"
PLURAL: dict[CredentialKind, str] = {"reviewer": "reviewers", "agent": "agents"}

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help="Manage them over this server, as an admin reviewer ($CROSSGATE_TOKEN or --token-file). "
        "[default: the database, as the operator]",
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option("--token-file", metavar="FILE", dir_okay=False, help="A file holding the admin token."),
]
AuthorityDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--authority-dir",
        metavar="DIR",
        file_okay=False,
        help="The authority's key directory. [default: as crossgate serve finds it]",
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        envvar=DATA_DIR_ENV,
        file_okay=False,
        help="The server's data directory. [default: ~/.local/share/crossgate]",
    ),
]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The reviewer's or agent's name.")]
ByOpt = Annotated[
    str | None, typer.Option("--by", metavar="NAME", help="Who makes the change, for the audit log. [default: OS user]")
]


class Backend(Protocol):
    """Where the credentials are changed: the database (operator) or a server (admin)."""

    def add(self, kind: CredentialKind, name: str, scope: Scope) -> dict[str, Any]: ...
    def list(self, kind: CredentialKind, include_revoked: bool) -> list[dict[str, Any]]: ...
    def rotate(self, kind: CredentialKind, name: str) -> dict[str, Any]: ...
    def revoke(self, kind: CredentialKind, name: str) -> dict[str, Any]: ...


@dataclass
class Where:
    """The options every credential command takes."""

    server: str | None
    token_file: Path | None
    authority_dir: Path | None
    data_dir: Path | None
    by: str | None

    def backend(self, ctx: typer.Context) -> Backend:
        if self.server:
            return ServerBackend(self.server, _admin_token(self.token_file))
        return StoreBackend(ctx, self)


class StoreBackend:
    """The operator's way: the store directly, signing with the authority's key."""

    def __init__(self, ctx: typer.Context, where: Where) -> None:
        state = ctx.ensure_object(CliContext)
        data = data_directory(where.data_dir)
        try:
            target = resolve_db(state.db) if state.db else data_database(data)
            require_database(target)
            key_dir, _named = key_directory(data, where.authority_dir)
            keyring = Keyring.open(key_dir)
        except OSError as exc:  # a path the file system refuses (too long): one line, as any bad value
            raise ConfigurationError(f"cannot use {exc.filename or data}: {exc.strerror or exc}") from None
        except ValueError as exc:  # a NUL in a path
            raise ConfigurationError(f"cannot use the data directory {str(data)[:200]!r}: {exc}") from None
        self._store = open_store(target)
        ctx.call_on_close(self._store.close)
        authority, trusted = keyring.authority(), keyring.trusted_keys()
        heads = HeadSigner(self._store, authority, trusted=trusted)  # servers adopt what it signs
        self._manager = Credentials(self._store, authority=authority, trusted=trusted, heads=heads)
        self._actor = where.by if where.by is not None else os_user()

    def add(self, kind: CredentialKind, name: str, scope: Scope) -> dict[str, Any]:
        issued = self._manager.add(kind, name, scope=scope, actor=self._actor)
        return {"credential": credential_json(issued.credential), "token": issued.token}

    def list(self, kind: CredentialKind, include_revoked: bool) -> list[dict[str, Any]]:
        return [credential_json(c) for c in self._manager.list(kind, include_revoked=include_revoked)]

    def rotate(self, kind: CredentialKind, name: str) -> dict[str, Any]:
        issued = self._manager.rotate(kind, name, actor=self._actor)
        return {"credential": credential_json(issued.credential), "token": issued.token}

    def revoke(self, kind: CredentialKind, name: str) -> dict[str, Any]:
        return {"credential": credential_json(self._manager.revoke(kind, name, actor=self._actor))}


class ServerBackend:
    """An admin reviewer's way: the server's admin API."""

    def __init__(self, server: str, token: str) -> None:
        self._base = server.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            import httpx
        except ImportError:
            raise ConfigurationError("--server needs httpx: pip install 'crossgate[remote]'") from None
        url = f"{self._base}/api/admin/{path}"
        try:
            response = httpx.request(method, url, json=body, headers=self._headers, timeout=30)
        except httpx.HTTPError as exc:
            raise ConfigurationError(f"cannot reach {self._base}: {exc}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        message = data.get("message") if isinstance(data, dict) else None
        raise _server_error(response.status_code, f"{self._base}: {message or response.reason_phrase}")

    def add(self, kind: CredentialKind, name: str, scope: Scope) -> dict[str, Any]:
        return self._call("POST", PLURAL[kind], {"name": name, **scope.as_json()})

    def list(self, kind: CredentialKind, include_revoked: bool) -> list[dict[str, Any]]:
        found = self._call("GET", f"{PLURAL[kind]}?include_revoked={'true' if include_revoked else 'false'}")
        items = found.get("items")
        if not isinstance(items, list):
            raise ConfigurationError(f"{self._base}: the answer holds no items")
        return items

    def rotate(self, kind: CredentialKind, name: str) -> dict[str, Any]:
        return self._call("POST", f"{PLURAL[kind]}/{name}/rotate")

    def revoke(self, kind: CredentialKind, name: str) -> dict[str, Any]:
        return self._call("POST", f"{PLURAL[kind]}/{name}/revoke")


def _server_error(status: int, message: str) -> CrossgateError:
    if status == 404:
        return NotFoundError(message)
    if status == 409:
        return ConflictError(message)
    return ConfigurationError(message)


def _admin_token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"cannot read the token file {token_file}: {exc}") from None
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ConfigurationError(f"--server needs an admin token: set ${TOKEN_ENV} or pass --token-file")
    return token


def _checked_name(kind: CredentialKind, name: str) -> str:
    try:
        return check_name(kind, name)
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint="'NAME'") from None


def _note(message: str) -> None:
    typer.echo(visible(message), err=True)


def _scope_text(scope: dict[str, Any]) -> str:
    parts = [f"{key} {','.join(scope[key])}" for key in ("frameworks", "tools", "agents") if scope.get(key)]
    text = "; ".join(parts) or "everything"
    return f"{text}; admin" if scope.get("admin") else text


def _issued(kind: CredentialKind, result: dict[str, Any], verb: str, as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    credential = result["credential"]
    say(str(result["token"]))
    scope = f" (may decide {_scope_text(credential['scope'])})" if kind == "reviewer" else ""
    _note(f"{verb} {kind} {credential['name']}{scope}; the token above is shown this once")


def _print_list(kind: CredentialKind, items: list[dict[str, Any]]) -> None:
    if not items:
        _note(f"no stored {PLURAL[kind]}")
        return
    for item in items:
        state = f"revoked {item['revoked_at'][:19]} by {item['revoked_by']}" if item.get("revoked_at") else "live"
        scope = f"  {_scope_text(item['scope'])}" if kind == "reviewer" else ""
        say(f"{item['name']}{scope}  added {item['created_at'][:19]} by {item['created_by']}  {state}")


def _commands(kind: CredentialKind) -> typer.Typer:
    plural = PLURAL[kind]
    group = typer.Typer(
        name=plural,
        help=f"Stored {kind} credentials: add, list, rotate and revoke their tokens (shown once, kept as hashes).",
        no_args_is_help=True,
    )

    def add(
        ctx: typer.Context,
        name: NameArg,
        scope: Annotated[
            list[str] | None,
            typer.Option(
                "--scope",
                metavar="SCOPE",
                help="Reviewers only: admin, or frameworks=GLOBS, tools=GLOBS, agents=GLOBS; repeatable. "
                "[default: decide everything]",
            ),
        ] = None,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        authority_dir: AuthorityDirOpt = None,
        data_dir: DataDirOpt = None,
        by: ByOpt = None,
        as_json: JsonFlag = False,
    ) -> None:
        try:
            parsed = parse_scope(scope or ())
            if kind == "agent" and scope:
                raise ConfigurationError("an agent credential takes no scope: it submits and waits on its own calls")
        except ConfigurationError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--scope'") from None
        where = Where(server, token_file, authority_dir, data_dir, by)
        _issued(kind, where.backend(ctx).add(kind, _checked_name(kind, name), parsed), "added", as_json)

    def list_(
        ctx: typer.Context,
        include_revoked: Annotated[bool, typer.Option("--all", help="Revoked and rotated-out ones too.")] = False,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        authority_dir: AuthorityDirOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonFlag = False,
    ) -> None:
        items = Where(server, token_file, authority_dir, data_dir, None).backend(ctx).list(kind, include_revoked)
        if as_json:
            print_json(list_json(items))
        else:
            _print_list(kind, items)

    def rotate(
        ctx: typer.Context,
        name: NameArg,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        authority_dir: AuthorityDirOpt = None,
        data_dir: DataDirOpt = None,
        by: ByOpt = None,
        as_json: JsonFlag = False,
    ) -> None:
        where = Where(server, token_file, authority_dir, data_dir, by)
        _issued(kind, where.backend(ctx).rotate(kind, _checked_name(kind, name)), "rotated", as_json)

    def revoke(
        ctx: typer.Context,
        name: NameArg,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        authority_dir: AuthorityDirOpt = None,
        data_dir: DataDirOpt = None,
        by: ByOpt = None,
        as_json: JsonFlag = False,
    ) -> None:
        where = Where(server, token_file, authority_dir, data_dir, by)
        result = where.backend(ctx).revoke(kind, _checked_name(kind, name))
        if as_json:
            print_json(result)
            return
        say(f"revoked {kind} {result['credential']['name']}")
        _note("its token is refused from now on, by every server on this database")

    group.command("add", help=f"Add a {kind} and print their new token (shown once).")(add)
    group.command("list", help=f"The stored {plural}, oldest first; never their tokens.")(list_)
    group.command("rotate", help=f"Give a {kind} a new token (same scope); the old one is refused at once.")(rotate)
    group.command("revoke", help=f"Revoke a {kind}'s token: every server refuses it at once.")(revoke)
    return group


def register(app: typer.Typer) -> None:
    """Add ``reviewers`` and ``agents`` to ``app``."""
    app.add_typer(_commands("reviewer"))
    app.add_typer(_commands("agent"))

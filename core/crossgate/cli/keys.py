"""``crossgate keys``: the authority's signing keys (init, show, rotate, revoke).

The key directory is ``--dir``, else ``$CROSSGATE_AUTHORITY_DIR``, else ``~/.config/crossgate/authority``;
its layout is in :mod:`crossgate.authority.keyring`. Standard output carries only what an agent pins
(``init`` and ``rotate`` print the new key's pin line, ``show`` the whole pin text), so it can be piped
into a pin file; notes for the operator go to standard error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crossgate.authority.keyring import KEYRING_DIR_ENV, Keyring, default_directory
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import print_json, say
from crossgate.display import visible
from crossgate.errors import ConfigurationError

keys_app = typer.Typer(
    name="keys",
    help="The authority's signing keys: agents pin the public key, only the server and operators hold the private one.",
    no_args_is_help=True,
)

DirOpt = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        metavar="DIR",
        envvar=KEYRING_DIR_ENV,
        show_envvar=True,
        file_okay=False,
        help="The key directory. [default: ~/.config/crossgate/authority]",
    ),
]


def _directory(given: Path | None) -> Path:
    return given if given is not None else default_directory()


def _note(message: str) -> None:
    typer.echo(visible(message), err=True)


@keys_app.command("init")
def init(
    directory: DirOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing keyring and its private key.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create a key pair: the private key owner-only (0600), and print the public key line to pin."""
    keyring = Keyring.init(_directory(directory), force=force)
    record = _key_json(keyring, keyring.current)
    pin = record["public_key"]
    if as_json:
        print_json(record)
        return
    say(pin)
    _note(f"private key: {keyring.private_path(keyring.current)} (0600; never give it to an agent)")
    _note(f"pin the line above in each agent: CROSSGATE_AUTHORITY_PUBKEY='{pin}'")


@keys_app.command("show")
def show(directory: DirOpt = None, as_json: JsonFlag = False) -> None:
    """Print the public keys and kids an agent pins (revoked kids as ``revoked:KID`` lines).

    Warns on stderr if the current private key is missing or readable by other users.
    """
    keyring = Keyring.open(_directory(directory))
    if as_json:
        print_json(
            {
                "directory": str(keyring.directory),
                "current": keyring.current,
                "keys": [_key_json(keyring, k.kid) for k in keyring.file.keys],
            }
        )
        return
    for line in keyring.pin_text().splitlines():
        say(line)
    try:
        keyring.authority()
    except ConfigurationError as exc:
        _note(f"warning: {exc}")


@keys_app.command("rotate")
def rotate(directory: DirOpt = None, as_json: JsonFlag = False) -> None:
    """Add a new current signing key; the old public key stays trusted for what it already signed."""
    keyring = Keyring.open(_directory(directory))
    previous = keyring.current
    key = keyring.rotate()
    if as_json:
        print_json({**_key_json(keyring, key.kid), "previous": previous})
        return
    say(key.pin)
    _note(f"new current key {key.kid}; key {previous} still verifies what it signed, its private key file is removed")
    _note("pin the new key in each agent (crossgate keys show prints every key to pin)")


@keys_app.command("revoke")
def revoke(
    kid: Annotated[str, typer.Argument(metavar="KID", help="The key id to revoke (see crossgate keys show).")],
    directory: DirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a key: nothing it signed verifies any more, once agents pin the new keyring."""
    keyring = Keyring.open(_directory(directory))
    keyring.revoke(kid)
    if as_json:
        print_json(_key_json(keyring, kid))
        return
    say(f"revoked key {kid}")
    _note("agents refuse it once they pin the updated keys (crossgate keys show)")


def _key_json(keyring: Keyring, kid: str) -> dict[str, Any]:
    entry = next(k for k in keyring.file.keys if k.kid == kid)
    revoked = next((r for r in keyring.file.revoked if r.kid == kid), None)
    return {
        "kid": kid,
        "public_key": entry.public_key,
        "created_at": entry.created_at.isoformat(),
        "current": kid == keyring.current,
        "revoked_at": revoked.revoked_at.isoformat() if revoked else None,
        "private_key": str(keyring.private_path(kid)) if kid == keyring.current else None,
    }


def register(app: typer.Typer) -> None:
    """Add ``keys`` to ``app``."""
    app.add_typer(keys_app)

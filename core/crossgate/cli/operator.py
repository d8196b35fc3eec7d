"""The keys a ``crossgate`` command holds: the operator's keyring when there is one, and pinned public keys.

An operator's machine (or the server host) has a key directory (``crossgate keys init``; ``--dir``,
``$CROSSGATE_AUTHORITY_DIR`` or ``~/.config/crossgate/authority``). When it holds a keyring, the CLI's
queue signs with its current key (audit checkpoints after each decision and standing rule) and trusts its
public keys. Public keys pinned in the environment (``$CROSSGATE_AUTHORITY_PUBKEY`` or ``_FILE``) are
trusted first. Nothing here is ever read from the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from crossgate.authority import Authority, Keyring, TrustedKeys, default_directory
from crossgate.authority.keyring import KEYRING_DIR_ENV, KEYRING_FILE
from crossgate.errors import ConfigurationError

AuthorityDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--authority-dir",
        metavar="DIR",
        envvar=KEYRING_DIR_ENV,
        show_envvar=True,
        file_okay=False,
        help="The authority's key directory. [default: ~/.config/crossgate/authority]",
    ),
]


@dataclass(frozen=True, slots=True)
class OperatorKeys:
    """The private key this command may sign with (None: it signs nothing) and the public keys it trusts."""

    authority: Authority | None = None
    trusted: TrustedKeys | None = None
    directory: Path | None = None
    """The key directory looked in."""


def operator_keys(directory: Path | None = None) -> OperatorKeys:
    """The keys of this command: the keyring in ``directory`` (default: the operator's) if there is one.

    A keyring without its private key file only verifies. One whose private key other users may read or
    change is refused with its one-line ConfigurationError: an operator's key is not used half-protected.
    """
    target = directory if directory is not None else default_directory()
    pinned = TrustedKeys.from_env()
    if not (target / KEYRING_FILE).is_file():
        return OperatorKeys(None, pinned, target)
    keyring = Keyring.open(target)
    trusted = pinned or keyring.trusted_keys()
    if not keyring.private_path(keyring.current).exists():  # public keys only: it verifies, and signs nothing
        return OperatorKeys(None, trusted, target)
    return OperatorKeys(keyring.authority(), trusted, target)


def require_authority(keys: OperatorKeys, action: str) -> Authority:
    """The private key, or one line saying that ``action`` needs it and where it was looked for."""
    if keys.authority is None:
        raise ConfigurationError(
            f"{action} signs with the authority's private key, and there is no keyring in {keys.directory}: "
            "run it where the key is (the server host), pass --dir, or create one with crossgate keys init"
        )
    return keys.authority

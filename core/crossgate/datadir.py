"""Where a server keeps its own files: the data directory, and the pin path agents read by default.

The data directory is ``--data-dir``, else ``$CROSSGATE_DATA_DIR``, else ``$XDG_DATA_HOME/crossgate``
(``~/.local/share/crossgate``). ``crossgate serve`` keeps there, unless told otherwise: the SQLite database
(``crossgate.db``), the authority's key directory (``authority/``), and what its first run printed
(``agent.env``, ``admin.token``, both owner-only). The ``crossgate reviewers|agents`` commands find the
database and the key there too.
"""

from __future__ import annotations

import os
from pathlib import Path

from crossgate.authority.keyring import KEYRING_DIR_ENV, KEYRING_FILE
from crossgate.authority.keyring import default_directory as default_key_directory

DATA_DIR_ENV = "CROSSGATE_DATA_DIR"
DB_FILE = "crossgate.db"
AUTHORITY_DIR = "authority"
AGENT_ENV_FILE = "agent.env"
ADMIN_TOKEN_FILE = "admin.token"
PIN_FILE = "authority.pub"


def data_directory(given: Path | None = None) -> Path:
    """``given``, else ``$CROSSGATE_DATA_DIR``, else ``$XDG_DATA_HOME/crossgate`` (``~/.local/share`` by default)."""
    if given is not None:
        return given
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "crossgate"


def default_pin_path() -> Path:
    """``$XDG_CONFIG_HOME/crossgate/authority.pub`` (``~/.config`` by default): the pin a gate reads when given none."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "crossgate" / PIN_FILE


def key_directory(data: Path, given: Path | None = None) -> tuple[Path, bool]:
    """The authority's key directory, and whether it was named (an error if it holds no keyring).

    ``given``, else ``$CROSSGATE_AUTHORITY_DIR``; else the operator's default folder when it holds a keyring
    already (``crossgate keys init`` before this); else ``DATA/authority``, which a first run fills.
    """
    if given is not None:
        return given, True
    if os.environ.get(KEYRING_DIR_ENV):
        return default_key_directory(), True
    operator = default_key_directory()
    if (operator / KEYRING_FILE).is_file():
        return operator, False
    return data / AUTHORITY_DIR, False


def data_database(data: Path) -> str:
    """The SQLite database of the data directory."""
    return str(data / DB_FILE)

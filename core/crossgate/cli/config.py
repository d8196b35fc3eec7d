"""The reviewer's login: the review server's URL and a reviewer token, in an owner-only file.

``crossgate login URL`` writes ``$XDG_CONFIG_HOME/crossgate/config.toml`` (``~/.config`` by default),
the folder mode 0700 and the file 0600, replaced whole so no reader sees half a file. A file that other
users may read or change is refused with one line, as the authority's private key is: it holds a
credential.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from crossgate.authority.keys import read_owner_only
from crossgate.errors import ConfigurationError

CONFIG_FILE = "config.toml"


class LoginFileError(ConfigurationError):
    """The login file cannot be read, is malformed, or other users may read or change it."""


@dataclass(frozen=True)
class Login:
    """A review server and the reviewer token that signs in to it."""

    server: str
    token: str


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/crossgate/config.toml``, else ``~/.config/crossgate/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "crossgate" / CONFIG_FILE


def read_login(path: Path | None = None) -> Login | None:
    """The stored login, or None when there is no file; LoginFileError for one that cannot be trusted."""
    path = path or config_path()
    try:
        raw = read_owner_only(path, "the crossgate login file")
    except FileNotFoundError:
        return None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LoginFileError(f"cannot read the crossgate login file {path}: {exc}") from None
    server, token = data.get("server"), data.get("token")
    if not isinstance(server, str) or not isinstance(token, str) or not server or not token:
        raise LoginFileError(f"the crossgate login file {path} names no server and token; run: crossgate login URL")
    return Login(server=server, token=token)


def write_login(login: Login, path: Path | None = None) -> Path:
    """Store ``login`` owner-only, replacing any earlier one; the path written."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = f"# written by 'crossgate login'; holds a credential\nserver = {_toml(login.server)}\n"
    text += f"token = {_toml(login.token)}\n"
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(staged, path)
    except OSError as exc:
        staged.unlink(missing_ok=True)
        raise LoginFileError(f"cannot write the crossgate login file {path}: {exc.strerror}") from None
    return path


def remove_login(path: Path | None = None) -> bool:
    """Delete the stored login; False when there was none."""
    path = path or config_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise LoginFileError(f"cannot remove the crossgate login file {path}: {exc.strerror}") from None
    return True


def _toml(text: str) -> str:
    """A TOML basic string (the URL and the token are checked printable; quotes and backslashes escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

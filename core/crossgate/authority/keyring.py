"""The operator's key directory: the keyring of public keys, and the current private key.

::

    DIR/                  0700
      keyring.json        0644  public: every key by kid, the current kid, revoked kids
      <kid>.pem           0600  the current key's private key (PKCS#8 PEM); only the current one is kept

``keyring.json``::

    {"format": "crossgate-keyring/1", "current": "<kid>",
     "keys": [{"kid": "<kid>", "public_key": "ed25519:<base64url>", "created_at": "<ISO 8601>"}],
     "revoked": [{"kid": "<kid>", "revoked_at": "<ISO 8601>"}]}

``keyring.json`` holds no secret: it may be copied to an agent's host as its pin file
(``$CROSSGATE_AUTHORITY_PUBKEY_FILE``), where the agent must not be able to write it. Rotation adds a
key and makes it current; the previous public key stays, so what it signed still verifies, and its
private key file is removed. Revocation refuses everything a key ever signed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from crossgate.authority.claims import UtcTime
from crossgate.authority.keys import Authority, PublicKey, TrustedKeys, read_private_file
from crossgate.clock import Clock, utc_now
from crossgate.errors import ConfigurationError, ConflictError, NotFoundError

KEYRING_FILE = "keyring.json"
KEYRING_FORMAT = "crossgate-keyring/1"
KEYRING_DIR_ENV = "CROSSGATE_AUTHORITY_DIR"
"""The operator's key directory when ``--dir`` is not given."""


DEFAULT_PIN_PATH = "$XDG_CONFIG_HOME/crossgate/authority.pub"
"""Where a gate given no pin looks for one (``~/.config/crossgate/authority.pub`` without ``$XDG_CONFIG_HOME``):
the pin text ``crossgate serve``'s first run writes. :func:`default_pin_path` resolves it now."""


def config_home() -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config``."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config"))


def default_pin_path() -> Path:
    """:data:`DEFAULT_PIN_PATH` as it resolves in this environment."""
    return config_home() / "crossgate" / "authority.pub"


def default_directory() -> Path:
    """``$CROSSGATE_AUTHORITY_DIR``, else ``$XDG_CONFIG_HOME/crossgate/authority`` (``~/.config`` by default)."""
    configured = os.environ.get(KEYRING_DIR_ENV)
    if configured:
        return Path(configured)
    return config_home() / "crossgate" / "authority"


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KeyEntry(_Entry):
    """One public key of the keyring."""

    kid: str
    public_key: str
    created_at: UtcTime

    def key(self) -> PublicKey:
        """The public key, checked to be the one its kid names."""
        key = PublicKey.parse(self.public_key)
        if key.kid != self.kid:
            raise ConfigurationError(f"keyring entry {self.kid} holds a key whose kid is {key.kid}")
        return key


class RevokedEntry(_Entry):
    """A revoked kid: nothing it signed verifies any more."""

    kid: str
    revoked_at: UtcTime


class KeyringFile(_Entry):
    """The content of ``keyring.json``."""

    format: Literal["crossgate-keyring/1"] = "crossgate-keyring/1"
    current: str
    keys: tuple[KeyEntry, ...] = Field(min_length=1)
    revoked: tuple[RevokedEntry, ...] = ()

    @model_validator(mode="after")
    def _current_is_a_live_key(self) -> KeyringFile:
        if self.current not in {k.kid for k in self.keys}:
            raise ValueError(f"current key {self.current} is not in keys")
        if self.current in self.revoked_kids:
            raise ValueError(f"current key {self.current} is revoked")
        return self

    @classmethod
    def parse(cls, text: str) -> KeyringFile:
        """Read a keyring document; ConfigurationError if it is not one."""
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ConfigurationError(f"not a crossgate keyring: {where}: {first['msg']}") from None

    @property
    def revoked_kids(self) -> frozenset[str]:
        return frozenset(r.kid for r in self.revoked)

    def trusted_keys(self) -> TrustedKeys:
        """Every key of the keyring, with its revoked kids refused."""
        return TrustedKeys([k.key() for k in self.keys], revoked=self.revoked_kids)


class Keyring:
    """A key directory on disk (see the module docstring); every change is saved at once."""

    def __init__(self, directory: Path, file: KeyringFile) -> None:
        self.directory = directory
        self.file = file

    @classmethod
    def init(cls, directory: str | os.PathLike[str], *, force: bool = False, clock: Clock = utc_now) -> Keyring:
        """Create a key directory with one fresh key; refuse to replace an existing one without ``force``."""
        with _file_errors(directory):
            return cls._init(Path(directory), force=force, clock=clock)

    @classmethod
    def _init(cls, target: Path, *, force: bool, clock: Clock) -> Keyring:
        previous = None
        if (target / KEYRING_FILE).exists():
            if not force:
                raise ConflictError(f"{target} already holds a keyring; pass --force to replace it")
            with contextlib.suppress(ConfigurationError):
                previous = cls.open(target)
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        authority = Authority.generate()
        _write_private(target / f"{authority.kid}.pem", authority.private_pem())
        entry = KeyEntry(kid=authority.kid, public_key=authority.public_key.pin, created_at=clock())
        keyring = cls(target, KeyringFile(current=authority.kid, keys=(entry,)))
        keyring._save()
        if previous is not None:
            for old in previous.file.keys:
                if old.kid != authority.kid:
                    _remove(previous.private_path(old.kid))
        return keyring

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> Keyring:
        """The key directory at ``directory``."""
        target = Path(directory)
        try:
            text = (target / KEYRING_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigurationError(
                f"no keyring in {target}; create one with: crossgate keys init --dir {target}"
            ) from None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {target / KEYRING_FILE}: {exc.strerror}") from None
        return cls(target, KeyringFile.parse(text))

    @property
    def current(self) -> str:
        """The kid new signatures use."""
        return self.file.current

    def private_path(self, kid: str) -> Path:
        """Where the private key of ``kid`` is (only the current one exists)."""
        return self.directory / f"{kid}.pem"

    def authority(self) -> Authority:
        """The current key, read from its owner-only file."""
        authority = Authority.from_pem(read_private_file(self.private_path(self.current)), source=str(self.directory))
        if authority.kid != self.current:
            raise ConfigurationError(f"{self.private_path(self.current)} does not hold key {self.current}")
        return authority

    def trusted_keys(self) -> TrustedKeys:
        """The public side: every key, revoked kids refused."""
        return self.file.trusted_keys()

    def rotate(self, *, clock: Clock = utc_now) -> PublicKey:
        """Add a fresh key and make it current; the old public key stays, its private key file goes."""
        with _file_errors(self.directory):
            return self._rotate(clock)

    def _rotate(self, clock: Clock) -> PublicKey:
        old = self.current
        authority = Authority.generate()
        _write_private(self.private_path(authority.kid), authority.private_pem())
        entry = KeyEntry(kid=authority.kid, public_key=authority.public_key.pin, created_at=clock())
        self.file = self.file.model_copy(update={"keys": (*self.file.keys, entry), "current": authority.kid})
        self._save()
        _remove(self.private_path(old))
        return authority.public_key

    def revoke(self, kid: str, *, clock: Clock = utc_now) -> None:
        """Refuse everything ``kid`` signed from now on; the current key must be rotated away first."""
        if kid not in {k.kid for k in self.file.keys}:
            raise NotFoundError(f"the keyring in {self.directory} has no key {kid}")
        if kid in self.file.revoked_kids:
            raise ConflictError(f"key {kid} is already revoked")
        if kid == self.current:
            raise ConflictError(f"key {kid} is the current signing key; run crossgate keys rotate first")
        revoked = (*self.file.revoked, RevokedEntry(kid=kid, revoked_at=clock()))
        with _file_errors(self.directory):
            self.file = self.file.model_copy(update={"revoked": revoked})
            self._save()
            _remove(self.private_path(kid))

    def pin_text(self) -> str:
        """What an agent pins: every live key and every revoked kid, with comments (``crossgate keys show``)."""
        lines: list[str] = []
        for entry in self.file.keys:
            if entry.kid in self.file.revoked_kids:
                continue
            role = "current" if entry.kid == self.current else "previous"
            lines += [f"# kid {entry.kid} ({role}, created {_when(entry.created_at)})", entry.public_key]
        for revoked in self.file.revoked:
            lines += [f"# revoked {_when(revoked.revoked_at)}", f"revoked:{revoked.kid}"]
        return "\n".join(lines) + "\n"

    def _save(self) -> None:
        path = self.directory / KEYRING_FILE
        temporary = path.with_name(f".{KEYRING_FILE}.{os.getpid()}.tmp")
        temporary.write_text(self.file.model_dump_json(indent=2) + "\n", encoding="utf-8")
        temporary.chmod(0o644)
        os.replace(temporary, path)


@contextlib.contextmanager
def _file_errors(directory: str | os.PathLike[str]) -> Iterator[None]:
    """The key files' OS errors (a path too long, no permission, a full disk) as one ConfigurationError line."""
    try:
        yield
    except OSError as exc:
        shown = str(directory)
        shown = shown if len(shown) <= 120 else f"{shown[:119]}…"
        raise ConfigurationError(f"cannot write the key directory {shown}: {exc.strerror or exc}") from None


def _write_private(path: Path, pem: bytes) -> None:
    # O_EXCL: never through an existing file or symlink; 0600 from the first byte, whatever the umask.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConflictError(f"{path} already exists; refusing to overwrite a private key") from None
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
        out.flush()
        os.fsync(out.fileno())


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")

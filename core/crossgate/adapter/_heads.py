"""The state head where the tool runs: the newest signed head this gate has seen, kept in its own file.

A verified gate reads the store's state head of each of its pinned keys (``crossgate.state_head``; one per
kid) every few seconds, verifies each with its pinned keys and remembers the newest one in a file of its
own, never the store, beside a marker for each approval this machine's gates applied. It then refuses,
before anything runs:

- every call while the newest head it has is past its ``expires_at``, or there is none (``stale_head``:
  a frozen store, or no signer);
- a policy version older than the head's (``rolled_back``); a newer head naming an older policy version
  than one it holds is not adopted (the authority's server forgot, and the store was put back);
- a standing rule the head names revoked (``revoked_rule``);
- an approval the head, or this gate's file, names consumed (``consumed``).

The file is ``$CROSSGATE_HEAD_DIR/<kid>.json``, else ``$XDG_STATE_HOME/crossgate/heads/<kid>.json``
(``~/.local/state`` by default), where ``kid`` is the first pinned key's, with the markers in the folder
``<kid>.applied/`` beside it; ``verified_queue(..., head_file=...)`` overrides the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from crossgate.authority.claims import StateHeadClaims
from crossgate.authority.consumed import filter_bytes, in_filter
from crossgate.authority.keys import TrustedKeys
from crossgate.clock import Clock
from crossgate.errors import SignatureError
from crossgate.state_head import read_state_head

log = logging.getLogger(__name__)

HEAD_DIR_ENV = "CROSSGATE_HEAD_DIR"
"""The directory of a gate's head files (``<kid>.json``), instead of ``$XDG_STATE_HOME/crossgate/heads``."""
HEAD_FILE_FORMAT = "crossgate-head/1"
FETCH_SECONDS = 2.0
"""How often a gate reads the store's head again (the server signs one every few seconds)."""


def default_head_file(keys: TrustedKeys) -> Path:
    """Where a gate pinning ``keys`` keeps its newest head (see the module's docstring)."""
    return _head_dir() / f"{keys.kids[0]}.json"


def default_signer_file(kid: str) -> Path:
    """Where a server signing with key ``kid`` keeps the newest head it signed: ``<kid>.signer.json`` beside
    the gates' files (its own file, not a gate's: see ``HeadSigner.keep_in``)."""
    return _head_dir() / f"{kid}.signer.json"


def _head_dir() -> Path:
    directory = os.environ.get(HEAD_DIR_ENV)
    if not directory:
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        directory = str(Path(state) / "crossgate" / "heads")
    return Path(directory)


FOREVER = 2**40
"""The time stamp (seconds) of a marker for an approval that never lapses."""


class HeadFile:
    """A gate's memory: the newest head token in one JSON file (0600), and one marker file per approval
    applied on this machine in the folder beside it (``<kid>.applied/``), dated with its ``apply_by``.

    The head file is replaced atomically under a lock file, keeping the newer of its head and the one
    written; a marker costs one small file create, and checking one a ``stat``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.applied_dir = self.path.with_suffix(".applied")

    def read(self) -> str | None:
        """The head token stored; None with no file, or one unreadable (logged)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("crossgate: cannot read the state head file %s: %s", self.path, exc)
            return None
        try:
            data = json.loads(text)
            head = data.get("head") if data.get("format") == HEAD_FILE_FORMAT else None
        except (ValueError, AttributeError):
            head = None
        if not isinstance(head, str):
            log.warning("crossgate: ignoring the state head file %s: not a %s file", self.path, HEAD_FILE_FORMAT)
            return None
        return head

    def write(self, newer: Callable[[str | None], str | None]) -> None:
        """Store ``newer(stored head)``; a file that cannot be written is logged (the gate keeps its memory)."""
        try:
            with self._locked():
                document = {"format": HEAD_FILE_FORMAT, "head": newer(self.read())}
                temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(document, out, separators=(",", ":"))
                os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("crossgate: cannot write the state head file %s: %s", self.path, exc)

    def mark_applied(self, request_id: str, apply_by: datetime | None) -> None:
        """Leave the marker of ``request_id``'s approval, dated with its ``apply_by``."""
        marker = self._marker(request_id)
        stamp = FOREVER if apply_by is None else apply_by.timestamp()
        try:
            try:
                fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
            except FileNotFoundError:
                self.applied_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)
            os.utime(marker, (stamp, stamp))
        except OSError as exc:
            log.warning("crossgate: cannot record the applied approval in %s: %s", self.applied_dir, exc)

    def was_applied(self, request_id: str, now: datetime) -> bool:
        """True when an approval of ``request_id`` was applied on this machine and could still apply."""
        try:
            return self._marker(request_id).stat().st_mtime > now.timestamp()
        except OSError:
            return False

    def prune(self, now: datetime) -> None:
        """Remove the markers of approvals past their ``apply_by``."""
        with contextlib.suppress(OSError):
            for marker in self.applied_dir.iterdir():
                with contextlib.suppress(OSError):
                    if marker.stat().st_mtime <= now.timestamp():
                        marker.unlink()

    def _marker(self, request_id: str) -> Path:
        return self.applied_dir / hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:40]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


STALE = (
    "crossgate did not run {tool}: {problem}. Nothing ran. Do not retry it now; tell the user the crossgate "
    "server must be running (and the store current) before tools can run."
)
ROLLED_BACK = (
    "crossgate did not run {tool}: {problem}. Nothing ran. Do not retry it; tell the user the store was rolled "
    "back and an operator must look at it."
)
CONSUMED = (
    "crossgate did not run {tool}: the approval on request {request} was applied already, so it cannot run again. "
    "Nothing ran. Do not retry it; ask the user for a new approval if the call is still needed."
)
REVOKED_RULE = (
    "standing rule {rule} allowed this {tool} call, but the authority's state head shows the rule revoked, so it "
    "was not run. Do not retry it; tell the user it needs a reviewer's decision."
)


@dataclass
class HeadGuard:
    """The newest valid head a gate has seen, fetched (``fetch(kid)``, for each pinned key not revoked)
    every :data:`FETCH_SECONDS`."""

    keys: TrustedKeys
    fetch: Callable[[str], str | None]
    file: HeadFile
    clock: Clock
    sign: Callable[[], object] | None = None
    """An in-process signer (a queue holding the authority): asked for a fresh head when this one ages."""
    _head: StateHeadClaims | None = field(default=None, repr=False)
    _token: str | None = field(default=None, repr=False)
    _fetched: float = field(default=float("-inf"), repr=False)
    _consumed: bytes = field(default=b"", repr=False)
    """The head's consumed filter, decoded once per head."""
    _lowering: str | None = field(default=None, repr=False)
    """The last head refused for naming an older policy version (warned about once)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._take(self.file.read())
        self.file.prune(self.clock())

    def current(self) -> StateHeadClaims:
        """The newest valid head; SignatureError ``stale_head`` when it is missing or past its expiry."""
        now = self.clock()
        head = self._head
        if head is None or time.monotonic() - self._fetched >= FETCH_SECONDS or head.expires_at <= now:
            head = self._refresh(now)
        if head is None:
            raise SignatureError(
                "no state head signed by the authority is available (the crossgate server signs one every few "
                "seconds: is it running on this store?)",
                reason="stale_head",
            )
        if head.expires_at <= now:
            raise SignatureError(
                f"the newest state head signed by the authority expired at {_when(head.expires_at)} (the store "
                "is frozen, or the crossgate server stopped signing)",
                reason="stale_head",
            )
        return head

    def consumed(self, request_id: str) -> bool:
        """True when the head, or an approval applied on this machine, names ``request_id`` consumed."""
        if self.file.was_applied(request_id, self.clock()):
            return True
        return bool(self._consumed) and in_filter(self._consumed, request_id)

    def applied(self, request_id: str, apply_by: datetime | None) -> None:
        """Remember that ``request_id``'s approval ran here (a marker file, for every later process)."""
        self.file.mark_applied(request_id, apply_by)

    def _refresh(self, now: datetime) -> StateHeadClaims | None:
        with self._lock:
            self._fetched = time.monotonic()
            head = self._head
            if self.sign is not None and (head is None or _aging(head, now)):
                self.sign()
            adopted = False
            for kid in self.keys.kids:
                if kid in self.keys.revoked:
                    continue
                try:
                    token = self.fetch(kid)
                except Exception as exc:  # the store or the server is down: the remembered head still counts
                    log.warning("crossgate: could not read the state head: %s", exc)
                    continue
                adopted = self._take(token, kid) or adopted
            if adopted:
                self.file.write(self._newer)
            return self._head

    def _take(self, token: str | None, kid: str | None = None) -> bool:
        """Adopt ``token`` (filed under ``kid``) if it verifies and is newer than the head held; True if adopted."""
        if token is None or token == self._token:
            return False
        claims = read_state_head(token, self.keys, kid)
        if claims is None or (self._head is not None and claims.issued_at <= self._head.issued_at):
            return False
        if self._head is not None and (lower := _lowers_policy(claims, self._head)) is not None:
            if token != self._lowering:
                log.warning("crossgate: ignoring a newer state head that %s (a rollback)", lower)
                self._lowering = token  # warned once, not every few seconds
            return False
        self._head, self._token = claims, token
        self._consumed = filter_bytes(claims.consumed)
        return True

    def _newer(self, stored: str | None) -> str | None:
        """Of the file's head and this gate's, the newer valid one (another process may have seen a newer one)."""
        self._take(stored)
        return self._token


def _lowers_policy(newer: StateHeadClaims, held: StateHeadClaims) -> str | None:
    """What is wrong when ``newer`` names an older policy version than the head ``held`` (the authority never
    signs one: its server lost its memory, and the store was put back); None when it does not."""
    floor = held.policy_version
    if floor is None or (newer.policy_version is not None and newer.policy_version >= floor):
        return None
    shown = "no policy version" if newer.policy_version is None else f"policy version {newer.policy_version}"
    return f"names {shown}, older than version {floor} in a head already seen"


def _aging(head: StateHeadClaims, now: datetime) -> bool:
    return (head.expires_at - now) * 2 < head.expires_at - head.issued_at


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")

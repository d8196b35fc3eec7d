"""The first run of ``crossgate serve``: the authority's keys, a first admin and agent credential, the pin.

On a store that holds no credential yet, ``crossgate serve`` adds an admin reviewer (``admin``) and an
agent (``agent``), prints once what an agent needs (the server's URL, the agent's token and the public-key
pin) as an environment block, and writes it to ``agent.env`` in the data directory (owner-only), the admin
token to ``admin.token`` (owner-only), and the pin to :func:`crossgate.datadir.default_pin_path` unless a
file there pins another key (then one line says so). Keys are made when the key directory holds none,
and only in the data directory (a named ``--authority-dir`` must hold a keyring). A later start finds all
of it and changes nothing, prints nothing of it. See docs/server.md ("First run").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from crossgate.authority.claims import policy_digest
from crossgate.authority.keyring import KEYRING_FILE, Keyring
from crossgate.authority.keys import TrustedKeys
from crossgate.credentials import Credentials, Scope
from crossgate.datadir import ADMIN_TOKEN_FILE, AGENT_ENV_FILE, default_pin_path
from crossgate.errors import ConfigurationError, ConflictError
from crossgate.policy import Policy
from crossgate.policy.versions import apply_policy
from crossgate.server.settings import ServerSettings
from crossgate.stores.base import Store

FIRST_ADMIN = "admin"
FIRST_AGENT = "agent"
SETUP_CHANNEL = "setup"


@dataclass
class SetupReport:
    """What a start set up: lines for standard output (printed once) and notes for standard error."""

    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    admin_token: str | None = None


def open_keyring(directory: Path, *, named: bool, data: Path, report: SetupReport) -> Keyring:
    """The keyring in ``directory``; made there first (private key 0600) when it is the data directory's own."""
    if (directory / KEYRING_FILE).is_file() or named:
        return Keyring.open(directory)  # a named folder without a keyring is refused: a typo must not make keys
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    keyring = Keyring.init(directory)
    report.lines.append(
        f"crossgate: first run: made the authority key {keyring.current} in {directory} (private key 0600)"
    )
    return keyring


def first_credentials(
    credentials: Credentials | None,
    *,
    keyring: Keyring,
    server_url: str,
    data: Path,
    actor: str,
    taken: ServerSettings,
    report: SetupReport,
) -> None:
    """On a store without credentials: add the first admin and agent, print and write what an agent needs."""
    if credentials is None or credentials.list(include_revoked=True):
        return
    for kind, name, names in (
        ("reviewer", FIRST_ADMIN, {r.name for r in taken.reviewers}),
        ("agent", FIRST_AGENT, {a.name for a in taken.agents}),
    ):
        if name in names:
            raise ConfigurationError(
                f"the tokens file names a {kind} {name!r}, the name the first run gives its own: rename that entry"
            )
    try:
        admin = credentials.add("reviewer", FIRST_ADMIN, scope=Scope(admin=True), actor=actor, channel=SETUP_CHANNEL)
        agent = credentials.add("agent", FIRST_AGENT, actor=actor, channel=SETUP_CHANNEL)
    except ConflictError:  # another server on this database made its first run at the same moment
        report.notes.append("crossgate: note: another server set this database up at the same time; see its output")
        return
    block = agent_block(server_url, agent.token, keyring)
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    env_file = _write_once(data / AGENT_ENV_FILE, block, report)
    token_file = _write_once(data / ADMIN_TOKEN_FILE, admin.token + "\n", report)
    report.admin_token = admin.token
    report.lines += [
        f"crossgate: first run: added reviewer {FIRST_ADMIN!r} (admin) and agent {FIRST_AGENT!r}; "
        "their tokens are shown this once",
        f"crossgate: {FIRST_ADMIN}'s token{token_file}: {admin.token}",
        f"crossgate: what an agent needs{env_file}:",
        *block.splitlines()[1:],
    ]


def agent_block(server_url: str, token: str, keyring: Keyring) -> str:
    """The environment block an agent is started with."""
    revoked = keyring.file.revoked_kids
    pins = ",".join(k.public_key for k in keyring.file.keys if k.kid not in revoked)
    return (
        "# crossgate: what an agent needs (written once by the first run of crossgate serve)\n"
        f"CROSSGATE_SERVER={server_url}\n"
        f"CROSSGATE_AGENT_TOKEN={token}\n"
        f"CROSSGATE_AUTHORITY_PUBKEY={pins}\n"
    )


def write_default_pin(keyring: Keyring, report: SetupReport) -> None:
    """The pin at the default path, unless a file there pins another key (one note then, nothing written)."""
    path = default_pin_path()
    if path.exists():
        try:
            pinned = TrustedKeys.parse(path.read_text(encoding="utf-8"))
            same = keyring.current in pinned.kids
        except (OSError, UnicodeDecodeError, ConfigurationError):
            same = False
        if not same:
            report.notes.append(
                f"crossgate: note: {path} pins another key than this server's ({keyring.current}); left as it is"
            )
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(keyring.pin_text())
    except OSError as exc:
        report.notes.append(f"crossgate: note: cannot write the pin to {path}: {exc.strerror or exc}")
        return
    report.lines.append(f"crossgate: pinned key {keyring.current} in {path}, where gates look by default")


def first_policy(
    store: Store, keyring: Keyring, policy: Policy, source: str, *, actor: str, report: SetupReport
) -> None:
    """``policy`` as signed version 1 on a store with none; on one with versions, a note if it differs."""
    current = store.get_policy_version()
    if current is None:
        applied = apply_policy(
            store, keyring.authority(), policy, created_by=actor, source=source, channel=SETUP_CHANNEL
        )
        report.lines.append(f"crossgate: first run: applied {source} as policy version {applied.version.version}")
        return
    if policy_digest(policy) != current.digest:
        report.notes.append(
            f"crossgate: note: the store's policy is version {current.version}; --policy {source} differs and "
            "is not applied (crossgate policy apply changes it)"
        )


def _write_once(path: Path, text: str, report: SetupReport) -> str:
    """Write ``text`` to a new owner-only file; '' and a note if one is there already (never overwritten)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        report.notes.append(f"crossgate: note: {path} exists from an earlier setup; left as it is")
        return ""
    except OSError as exc:
        report.notes.append(f"crossgate: note: cannot write {path}: {exc.strerror or exc}")
        return ""
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return f" (also in {path}, 0600)"

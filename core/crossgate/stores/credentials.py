"""Stored credentials: reviewers' and agents' tokens, kept as sha256 digests, each signed by the authority.

A small protocol of its own, beside ``Store``: the server and the ``crossgate reviewers|agents`` commands
need it, the review queue does not. A row is never changed but to revoke it; rotating revokes the old
row and adds a new one under the same name, in one transaction. At most one live (unrevoked) credential
per kind and name. Every change appends its audit event in the same transaction. The project's stores
(memory, SQLite, PostgreSQL) implement it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from crossgate.errors import ConfigurationError
from crossgate.model import Event, NewEvent

CredentialKind = Literal["reviewer", "agent"]
CREDENTIAL_KINDS: tuple[CredentialKind, ...] = ("reviewer", "agent")


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """One stored credential: never the token, only its digest, and the authority's signature over the row.

    Empty scope tuples mean no restriction (as for :class:`crossgate.server.settings.Reviewer`); ``admin``
    lets a reviewer manage credentials. Only what ``signature`` verifies is trusted.
    """

    id: str
    kind: CredentialKind
    name: str
    token_sha256: str
    created_at: datetime
    created_by: str
    signature: str
    frameworks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    admin: bool = False
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    @property
    def live(self) -> bool:
        """True until revoked (or rotated)."""
        return self.revoked_at is None

    def scope_json(self) -> str:
        """The scope columns as stored: canonical JSON."""
        scope = {"frameworks": list(self.frameworks), "tools": list(self.tools), "agents": list(self.agents)}
        return json.dumps({**scope, "admin": self.admin}, sort_keys=True, separators=(",", ":"))


def scope_fields(text: str) -> dict[str, Any]:
    """The keyword arguments of :class:`Credential` that the stored scope JSON holds."""
    data = json.loads(text)
    return {
        "frameworks": tuple(data.get("frameworks", ())),
        "tools": tuple(data.get("tools", ())),
        "agents": tuple(data.get("agents", ())),
        "admin": bool(data.get("admin", False)),
    }


def check_kind(kind: str) -> CredentialKind:
    """``kind`` as a credential kind; ConfigurationError for anything else."""
    for known in CREDENTIAL_KINDS:
        if kind == known:
            return known
    raise ConfigurationError(f"a credential is a reviewer or an agent, not {kind!r}")


@runtime_checkable
class CredentialStore(Protocol):
    """Persistence for credentials."""

    def insert_credential(self, credential: Credential, event: NewEvent) -> Event:
        """Store a new live credential and its event; ConflictError (nothing stored) if a live one of that
        kind has that name, or one has that token digest."""

    def revoke_credential(self, credential_id: str, at: datetime, by: str, event: NewEvent) -> Event | None:
        """Revoke the live credential ``credential_id`` with ``event``; None (nothing changes) if it is not live."""

    def rotate_credential(self, credential_id: str, new: Credential, event: NewEvent) -> Event | None:
        """Revoke ``credential_id`` (at ``new.created_at``, by ``new.created_by``) and store ``new``, in one
        transaction; None (nothing changes) if ``credential_id`` is not live."""

    def credential_for(self, token_sha256: str) -> Credential | None:
        """The live credential whose token has this digest, or None."""

    def list_credentials(
        self, kind: CredentialKind | None = None, *, include_revoked: bool = False
    ) -> list[Credential]:
        """Credentials (of ``kind``, or all) in creation order, revoked ones only when asked for."""


def credential_store(store: object) -> CredentialStore:
    """``store`` as the :class:`CredentialStore` it implements; ConfigurationError if it keeps no credentials."""
    if not isinstance(store, CredentialStore):
        raise ConfigurationError(f"{type(store).__name__} keeps no credentials")
    return store

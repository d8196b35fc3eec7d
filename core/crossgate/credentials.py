"""Credentials as commands: reviewers' and agents' tokens added, rotated, revoked and listed in the store.

A token is random (``secrets.token_urlsafe``), shown once to whoever added or rotated it, and stored only
as its sha256. Each stored row is signed by the authority (``crossgate.credential.v1`` claims), and the
server accepts a stored credential only when that signature verifies with its keys: a writer of the store
who lacks the private key cannot add a credential of its own. Every change is an audit event (who, what,
never the token). The tokens file (``crossgate.server.settings``) stays as configuration-as-code beside it.

The signature does not cover ``revoked_at``, so a writer of the store could put a revoked (or rotated
away) row back live. Each revocation and rotation therefore signs a state head at once
(:mod:`crossgate.state_head`), which names the revoked credential ids; a server refuses every
credential its signer has signed or adopted as revoked, whatever the store shows, and keeps its newest
head in a file of its own so that a restart forgets nothing.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from crossgate.authority.claims import CredentialClaims
from crossgate.authority.keys import Authority, TrustedKeys
from crossgate.clock import Clock, utc_now
from crossgate.errors import ConfigurationError, NotFoundError, SignatureError
from crossgate.model import NewEvent
from crossgate.stores.credentials import Credential, CredentialKind, CredentialStore, credential_store

if TYPE_CHECKING:
    from crossgate.state_head import HeadSigner

TOKEN_PREFIX: dict[CredentialKind, str] = {"reviewer": "cgr_", "agent": "cga_"}
"""Each kind's tokens start with this, so a token found in a log says what it is."""
SCOPE_KEYS = ("frameworks", "tools", "agents")
ADMIN_SCOPE = "admin"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
_VERIFIED_CACHE = 4096


def hash_token(token: str) -> str:
    """The sha256 hex digest under which a token is kept (tokens themselves are never stored)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What a reviewer may decide (empty: everything) and whether they may manage credentials."""

    frameworks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    admin: bool = False

    def as_json(self) -> dict[str, Any]:
        """The scope as a JSON object."""
        return {
            "frameworks": list(self.frameworks),
            "tools": list(self.tools),
            "agents": list(self.agents),
            "admin": self.admin,
        }


def parse_scope(values: Sequence[str]) -> Scope:
    """A scope from ``--scope`` values: ``admin``, or ``frameworks=A,B``, ``tools=GLOB``, ``agents=NAME``."""
    found: dict[str, list[str]] = {key: [] for key in SCOPE_KEYS}
    admin = False
    for value in values:
        if value == ADMIN_SCOPE:
            admin = True
            continue
        key, sep, globs = value.partition("=")
        items = [g.strip() for g in globs.split(",") if g.strip()]
        if not sep or key not in found or not items:
            raise ConfigurationError(
                f"bad scope {value!r}: use admin, or frameworks=..., tools=..., agents=... (comma-separated globs)"
            )
        found[key].extend(items)
    return Scope(
        frameworks=tuple(found["frameworks"]), tools=tuple(found["tools"]), agents=tuple(found["agents"]), admin=admin
    )


def scope_of(credential: Credential) -> Scope:
    """The scope a stored credential carries."""
    return Scope(
        frameworks=credential.frameworks, tools=credential.tools, agents=credential.agents, admin=credential.admin
    )


def check_name(kind: CredentialKind, name: str) -> str:
    """``name`` if it is a usable credential name; ConfigurationError otherwise."""
    if not _NAME.fullmatch(name):
        shown = name if len(name) <= 40 else name[:40] + "…"
        raise ConfigurationError(
            f"bad {kind} name {shown!r}: letters, digits and . _ @ + - (starting with a letter or digit), 100 at most"
        )
    return name


@dataclass(frozen=True, slots=True)
class Issued:
    """A credential just added or rotated, and its token: shown once, never stored."""

    credential: Credential
    token: str


def credential_claims(credential: Credential) -> CredentialClaims:
    """The claims the authority signs for ``credential``."""
    return CredentialClaims(
        id=credential.id,
        kind=credential.kind,
        name=credential.name,
        token_sha256=credential.token_sha256,
        frameworks=credential.frameworks,
        tools=credential.tools,
        agents=credential.agents,
        admin=credential.admin,
        created_by=credential.created_by,
        created_at=credential.created_at,
    )


def credential_json(credential: Credential) -> dict[str, Any]:
    """A credential as JSON, for listings and the admin API: never the token, nor its digest."""
    return {
        "kind": credential.kind,
        "name": credential.name,
        "id": credential.id,
        "scope": scope_of(credential).as_json(),
        "created_at": credential.created_at.isoformat(),
        "created_by": credential.created_by,
        "revoked_at": None if credential.revoked_at is None else credential.revoked_at.isoformat(),
        "revoked_by": credential.revoked_by,
    }


class Credentials:
    """Adds, rotates, revokes and looks up stored credentials; signs with ``authority``, verifies with ``trusted``.

    Changing credentials needs the authority's private key; looking one up needs only ``trusted`` (None:
    stored credentials are not accepted at all, as nothing can tell a signed one from a forged one). With
    ``heads`` (a server's signer), a credential it names revoked is refused even when its row is live again,
    and each revocation or rotation signs a fresh head at once.
    """

    def __init__(
        self,
        store: object,
        *,
        authority: Authority | None = None,
        trusted: TrustedKeys | None = None,
        clock: Clock = utc_now,
        heads: HeadSigner | None = None,
    ) -> None:
        self.store: CredentialStore = credential_store(store)
        self.authority = authority
        self.trusted = trusted if trusted is not None else (authority.trusted_keys() if authority else None)
        self.heads = heads
        self._clock = clock
        self._verified: dict[Credential, bool] = {}  # each row as read, once checked
        self._lock = threading.Lock()

    # changes ------------------------------------------------------------------------------------
    def add(
        self, kind: CredentialKind, name: str, *, scope: Scope = Scope(), actor: str, channel: str = "cli"
    ) -> Issued:
        """A new live credential ``name`` of ``kind``; ConflictError if a live one has that name already."""
        check_name(kind, name)
        if kind == "agent" and scope != Scope():
            raise ConfigurationError("an agent credential takes no scope: it submits and waits on its own calls only")
        issued = self._new(kind, name, scope, actor)
        event = self._event("credential_added", issued.credential, actor, channel)
        self.store.insert_credential(issued.credential, event)
        return issued

    def rotate(self, kind: CredentialKind, name: str, *, actor: str, channel: str = "cli") -> Issued:
        """A new token for ``name`` with the same scope; the old token is refused from this moment."""
        current = self.live(kind, name)
        issued = self._new(kind, name, scope_of(current), actor)
        event = self._event("credential_rotated", issued.credential, actor, channel, replaces=current.id)
        if self.store.rotate_credential(current.id, issued.credential, event) is None:
            raise NotFoundError(f"{kind} {name!r} was revoked or rotated meanwhile")
        self._sign_head()
        return issued

    def revoke(self, kind: CredentialKind, name: str, *, actor: str, channel: str = "cli") -> Credential:
        """Revoke ``name``'s live credential: its token is refused from this moment, by every server."""
        current = self.live(kind, name)
        now = self._clock()
        event = self._event("credential_revoked", current, actor, channel)
        if self.store.revoke_credential(current.id, now, actor, event) is None:
            raise NotFoundError(f"{kind} {name!r} was revoked or rotated meanwhile")
        self._sign_head()
        return replace(current, revoked_at=now, revoked_by=actor)

    def _sign_head(self) -> None:
        """Vouch for the revocation in a state head now (the store's copy can be put back later)."""
        if self.heads is not None:
            self.heads.sign_logged()  # on a store failure the revocation stands there; the next head names it

    def _new(self, kind: CredentialKind, name: str, scope: Scope, actor: str) -> Issued:
        if self.authority is None:
            raise ConfigurationError(
                "changing credentials signs with the authority's private key, and none is held here"
            )
        if not actor.strip():
            raise ConfigurationError("the audit log records who changes a credential; the name cannot be empty")
        token = TOKEN_PREFIX[kind] + secrets.token_urlsafe(32)
        unsigned = Credential(
            id=str(uuid.uuid4()),
            kind=kind,
            name=name,
            token_sha256=hash_token(token),
            created_at=self._clock(),
            created_by=actor,
            signature="",
            frameworks=scope.frameworks,
            tools=scope.tools,
            agents=scope.agents,
            admin=scope.admin,
        )
        signed = replace(unsigned, signature=self.authority.sign(credential_claims(unsigned)))
        return Issued(signed, token)

    def _event(
        self, kind: str, credential: Credential, actor: str, channel: str, *, replaces: str | None = None
    ) -> NewEvent:
        payload: dict[str, Any] = {
            "credential": credential.kind,
            "name": credential.name,
            "id": credential.id,
            "scope": scope_of(credential).as_json(),
        }
        if replaces is not None:
            payload["replaces"] = replaces
        return NewEvent(kind=kind, at=self._clock(), actor=actor, channel=channel, payload=payload)

    # reading ------------------------------------------------------------------------------------
    def list(self, kind: CredentialKind | None = None, *, include_revoked: bool = False) -> list[Credential]:
        """Stored credentials in creation order (live ones unless ``include_revoked``)."""
        return self.store.list_credentials(kind, include_revoked=include_revoked)

    def live(self, kind: CredentialKind, name: str) -> Credential:
        """The live credential ``name`` of ``kind``; NotFoundError if there is none."""
        found = next((c for c in self.store.list_credentials(kind) if c.name == name), None)
        if found is None:
            raise NotFoundError(f"no live {kind} named {name!r} (crossgate {kind}s list shows them)")
        return found

    def lookup(self, token_sha256: str) -> Credential | None:
        """The live stored credential with this token digest, if its signature verifies; None otherwise."""
        found = self.store.credential_for(token_sha256)
        return found if found is not None and self.verifies(found) else None

    def verifies(self, credential: Credential) -> bool:
        """True if the authority signed exactly this credential (remembered per row: verifying is pure)."""
        if self.trusted is None:
            return False
        if self.heads is not None and self.heads.credential_revoked(credential.id):
            return False  # revoked or rotated away, whatever the store shows now
        with self._lock:
            known = self._verified.get(credential)
        if known is not None:
            return known
        try:
            claims = self.trusted.verify(credential.signature, CredentialClaims)
            verified = claims == credential_claims(replace(credential, signature=""))
        except (SignatureError, ConfigurationError):
            verified = False
        with self._lock:
            if len(self._verified) >= _VERIFIED_CACHE:
                self._verified.clear()
            self._verified[credential] = verified
        return verified

"""The admin API under ``/api/admin``: stored reviewers' and agents' credentials, for admin reviewers only.

``crossgate reviewers|agents ... --server URL`` calls it. A token is in the answer that adds or rotates
a credential, once; the store keeps only its sha256. Documented in docs/server.md ("Credentials").
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from crossgate.credentials import Credentials, Issued, Scope, credential_json
from crossgate.errors import ConfigurationError, ConflictError, NotFoundError
from crossgate.server.access import Caller
from crossgate.server.api import CallerDep, StateDep
from crossgate.server.bodies import JsonRoute
from crossgate.server.errors import ForbiddenError
from crossgate.server.schemas import ErrorOut
from crossgate.server.state import ServerState
from crossgate.stores.credentials import CredentialKind

KINDS: dict[str, CredentialKind] = {"reviewers": "reviewer", "agents": "agent"}

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (401, "No token, or an unknown one."),
        (403, "The caller is not an admin reviewer (an agent token, or a reviewer without the admin scope)."),
        (404, "No such kind, or no live credential with this name."),
        (409, "A live credential has this name already (stored, or in the tokens file)."),
        (422, "A bad name or scope; the server holds no authority key to sign credentials with."),
    )
}

router = APIRouter(prefix="/api/admin", tags=["admin"], route_class=JsonRoute, responses=_ERRORS)


class CredentialIn(BaseModel):
    """A credential to add: its name and, for a reviewer, its scope (empty lists: no restriction)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    frameworks: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    admin: bool = False


def _admin(caller: CallerDep) -> Caller:
    if not caller.reviewer.admin:
        raise ForbiddenError(f"{caller.reviewer.name} is not an admin: managing credentials takes the admin scope")
    return caller


AdminDep = Annotated[Caller, Depends(_admin)]


def _kind(kinds: str) -> CredentialKind:
    kind = KINDS.get(kinds)
    if kind is None:
        raise NotFoundError(f"no such credential kind {kinds!r}: use reviewers or agents")
    return kind


def _manager(state: ServerState) -> Credentials:
    credentials = state.auth.credentials
    if credentials is None:
        raise ConfigurationError("this server's store keeps no credentials")
    return credentials


def _issued(issued: Issued) -> dict[str, Any]:
    return {"credential": credential_json(issued.credential), "token": issued.token}


@router.get("/{kinds}")
def list_credentials(
    kinds: str,
    state: StateDep,
    _caller: AdminDep,
    include_revoked: Annotated[bool, Query(description="Revoked and rotated-out credentials too.")] = False,
) -> dict[str, Any]:
    """The stored credentials of one kind (``reviewers`` or ``agents``), oldest first, in one page
    (``next_cursor`` is null); never their tokens."""
    found = _manager(state).list(_kind(kinds), include_revoked=include_revoked)
    return {"items": [credential_json(c) for c in found], "next_cursor": None}


@router.post("/{kinds}", status_code=201)
def add_credential(
    kinds: str, body: Annotated[CredentialIn, Body()], state: StateDep, caller: AdminDep
) -> dict[str, Any]:
    """Add a credential; the answer holds its token, the only time it is shown."""
    kind = _kind(kinds)
    in_file = state.settings.reviewers if kind == "reviewer" else state.settings.agents
    if any(entry.name == body.name for entry in in_file):
        raise ConflictError(f"{kind} {body.name!r} is in the server's tokens file; choose another name")
    scope = Scope(
        frameworks=tuple(body.frameworks), tools=tuple(body.tools), agents=tuple(body.agents), admin=body.admin
    )
    issued = _manager(state).add(kind, body.name, scope=scope, actor=caller.reviewer.name, channel=caller.channel)
    return _issued(issued)


@router.post("/{kinds}/{name}/rotate")
def rotate_credential(kinds: str, name: str, state: StateDep, caller: AdminDep) -> dict[str, Any]:
    """Give the credential a new token (same scope); the old one is refused from now on."""
    issued = _manager(state).rotate(_kind(kinds), name, actor=caller.reviewer.name, channel=caller.channel)
    return _issued(issued)


@router.post("/{kinds}/{name}/revoke")
def revoke_credential(kinds: str, name: str, state: StateDep, caller: AdminDep) -> dict[str, Any]:
    """Revoke the credential: its token is refused from now on, by every server on this database."""
    revoked = _manager(state).revoke(_kind(kinds), name, actor=caller.reviewer.name, channel=caller.channel)
    return {"credential": credential_json(revoked)}

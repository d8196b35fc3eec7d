"""The operator's commands over the server: the signed log and policy versions to read, and upkeep for admins.

Any reviewer may read what ``crossgate audit verify`` and ``crossgate policy show|history|diff`` check: the
stored policy versions with their tokens, the signed audit checkpoints and the log's recorded head. The
client verifies them itself with the public key it pins, so it need not trust the server. An admin reviewer
may apply a policy (the server signs it with its authority key, recorded as the admin), expire overdue
requests and prune old parked runs' SDK state: ``crossgate policy apply``, ``expire`` and ``runs prune``.
Documented in docs/server.md ("The CLI against a server").
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel, ConfigDict, Field

from crossgate.audit import heads_root
from crossgate.errors import AuditHeadMissingError, ConfigurationError, NotFoundError
from crossgate.limits import MAX_INT64
from crossgate.policy import Policy
from crossgate.policy.versions import apply_policy
from crossgate.server.admin_api import AdminDep
from crossgate.server.api import ERRORS, CallerDep, StateDep, request_view
from crossgate.server.bodies import JsonRoute
from crossgate.server.schemas import ErrorOut, ParkedRunOut, ParkedRunsOut, RequestOut
from crossgate.stores.base import PolicyVersion

CENTURY_SECONDS = 36500 * 24 * 3600
"""The longest ``older_than_seconds`` (as ``crossgate runs prune --older-than`` takes)."""

reading = APIRouter(prefix="/api", tags=["audit"], route_class=JsonRoute, responses={401: ERRORS[401]})
_ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (401, "No token, or an unknown one."),
        (403, "The caller is not an admin reviewer."),
        (409, "Another policy version was stored meanwhile: apply again to build on it."),
        (422, "A malformed body or policy; the server holds no authority key to sign with."),
    )
}
upkeep = APIRouter(prefix="/api/admin", tags=["admin"], route_class=JsonRoute, responses=_ADMIN_ERRORS)


class PolicyVersionOut(BaseModel):
    """A stored policy version as signed: only what ``token`` verifies is to be trusted."""

    version: int
    document: str = Field(description="The policy's canonical JSON, as signed.")
    token: str = Field(description="The authority's JWS over the version and the document's digest.")
    digest: str
    created_by: str
    created_at: datetime
    source: str | None = None

    @classmethod
    def of(cls, stored: PolicyVersion) -> PolicyVersionOut:
        return cls(**asdict(stored))


class PolicyVersionsOut(BaseModel):
    items: list[PolicyVersionOut]
    next_cursor: None = None


class CheckpointOut(BaseModel):
    """A signed audit checkpoint: only what ``token`` verifies is to be trusted."""

    seq: int
    head_hash: str
    at: datetime
    token: str
    authored: bool


class CheckpointsOut(BaseModel):
    items: list[CheckpointOut]
    next_cursor: None = None


class AuditHeadOut(BaseModel):
    """The log's head as the store records it apart from the events: the last event's ``seq`` and hash.

    Both null, and ``missing`` saying so, when the head row is gone (a database changed outside crossgate).
    """

    seq: int | None
    hash: str | None
    missing: str | None = None
    heads: list[tuple[int, int, str]] | None = None
    """Every partition's ``[partition, seq, hash]`` as of ``seq`` when the log is kept in several chains
    (PostgreSQL, migration 013): ``hash`` is then their root, and the events are checked against each."""


class PolicyIn(BaseModel):
    """A policy to apply: the policy itself (a policy file's content as JSON) and the file it came from."""

    model_config = ConfigDict(extra="forbid")

    policy: Policy
    source: str | None = Field(default=None, max_length=1000, description="The file it was applied from.")


class AppliedOut(BaseModel):
    """The version a policy apply stored (or the current one, ``unchanged``) and what changed from the previous."""

    version: PolicyVersionOut
    unchanged: bool
    changes: dict[str, Any]


class PruneIn(BaseModel):
    """Which parked runs' SDK state to drop: ended longer than ``older_than_seconds`` ago."""

    model_config = ConfigDict(extra="forbid")

    older_than_seconds: int = Field(gt=0, le=CENTURY_SECONDS)
    include_failed: bool = False
    dry_run: bool = False


class ExpiredOut(BaseModel):
    items: list[RequestOut]
    next_cursor: None = None


@reading.get("/policy/versions", response_model=PolicyVersionsOut)
def list_policy_versions(state: StateDep, caller: CallerDep) -> PolicyVersionsOut:
    """Every stored policy version, oldest first, in one page, each with its signature token."""
    return PolicyVersionsOut(items=[PolicyVersionOut.of(v) for v in state.queue.store.list_policy_versions()])


@reading.get("/policy/versions/{version}", response_model=PolicyVersionOut, responses={404: ERRORS[404]})
def get_policy_version(version: int, state: StateDep, caller: CallerDep) -> PolicyVersionOut:
    """One stored policy version."""
    stored = state.queue.store.get_policy_version(version) if 0 < version <= MAX_INT64 else None
    if stored is None:
        raise NotFoundError(f"no policy version {version} is stored")
    return PolicyVersionOut.of(stored)


@reading.get("/audit/checkpoints", response_model=CheckpointsOut)
def list_checkpoints(state: StateDep, caller: CallerDep) -> CheckpointsOut:
    """Every stored signed checkpoint, oldest first, in one page."""
    found = state.queue.store.list_checkpoints()
    return CheckpointsOut(items=[CheckpointOut(**asdict(c)) for c in found])


@reading.get("/audit/head", response_model=AuditHeadOut)
def audit_head(state: StateDep, caller: CallerDep) -> AuditHeadOut:
    """The log's recorded head (``crossgate audit verify`` checks the events against it)."""
    store = state.queue.store
    cut = getattr(store, "audit_cut", None)
    try:
        if cut is not None and store.partitions() > 1:  # type: ignore[attr-defined]
            upto, heads = cut()
            return AuditHeadOut(seq=upto, hash=heads_root(heads), heads=heads)
        seq, head_hash = store.audit_head()
    except AuditHeadMissingError as exc:
        return AuditHeadOut(seq=None, hash=None, missing=str(exc))
    return AuditHeadOut(seq=seq, hash=head_hash)


@upkeep.post("/policy/versions", response_model=AppliedOut)
def apply(body: Annotated[PolicyIn, Body()], state: StateDep, caller: AdminDep) -> AppliedOut:
    """Store the policy as the next version, signed with the server's authority key, recorded as the admin."""
    queue = state.queue
    if queue.authority is None:
        raise ConfigurationError("this server holds no authority key: apply the policy where the key is")
    applied = apply_policy(
        queue.store,
        queue.authority,
        body.policy,
        created_by=caller.reviewer.name,
        source=body.source,
        channel=caller.channel,
        clock=queue.now,
    )
    return AppliedOut(
        version=PolicyVersionOut.of(applied.version), unchanged=applied.unchanged, changes=applied.diff.summary()
    )


@upkeep.post("/requests/expire", response_model=ExpiredOut)
def expire(state: StateDep, caller: AdminDep) -> ExpiredOut:
    """Close every pending request past its expiry now (the server's sweep does it too); those it closed."""
    expired = []
    while batch := state.queue.expire_overdue():  # the store hands out overdue requests in batches
        expired.extend(batch)
    return ExpiredOut(items=[request_view(r, caller) for r in expired])


@upkeep.post("/runs/prune", response_model=ParkedRunsOut)
def prune(body: Annotated[PruneIn, Body()], state: StateDep, caller: AdminDep) -> ParkedRunsOut:
    """Drop the SDK state of runs resumed (or failed) long ago; each run as it was, with the bytes freed."""
    queue = state.queue
    older_than = timedelta(seconds=body.older_than_seconds)
    if body.dry_run:
        runs = queue.prunable_parked_states(older_than=older_than, include_failed=body.include_failed)
    else:
        runs = queue.prune_parked_states(
            older_than=older_than, include_failed=body.include_failed, actor=caller.reviewer.name
        )
    return ParkedRunsOut(items=[ParkedRunOut.of(p) for p in runs])

"""What the authority signs: one small typed payload per thing that can let a tool call run.

Each payload is a frozen pydantic model whose ``typ`` names its kind and version, so a signature over
one kind can never be read as another (a checkpoint token presented as a decision is refused). A
token's payload is the canonical JSON (:func:`crossgate.fingerprint.canonical_json`) of the model's
JSON form, times in UTC. Digests are the lowercase hex sha256 of a value's canonical JSON.

- :class:`DecisionClaims`: a reviewer's or operator's approve, edit, reject or respond, bound to one
  request and the fingerprint of the call it was made for;
- :class:`StandingRuleClaims`: everything that decides which later calls a standing rule covers;
- :class:`PolicyVersionClaims`: one version of the policy, by the digest of its canonical document;
- :class:`CheckpointClaims`: the head of the audit chain at one moment;
- :class:`CredentialClaims`: a stored reviewer's or agent's credential (the digest of its token, its scope).
- :class:`StateHeadClaims`: the newest state as a whole, for a short while (see :mod:`crossgate.state_head`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from crossgate.authority.consumed import filter_bytes, in_filter
from crossgate.decisions import AnyDecision
from crossgate.errors import InvalidDecisionError
from crossgate.fingerprint import canonical_json, fingerprint
from crossgate.model import (
    ApprovalRequest,
    DecisionKind,
    Edit,
    Reject,
    RememberMatch,
    RememberScope,
    Respond,
    StandingRule,
    VerdictKind,
)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


UtcTime = Annotated[AwareDatetime, AfterValidator(_utc)]
"""A timezone-aware time, kept in UTC so that equal moments sign equally."""
Digest = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def json_digest(value: Any) -> str:
    """The lowercase hex sha256 of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def policy_digest(document: Mapping[str, Any] | BaseModel) -> str:
    """The digest of a policy document (a ``Policy`` or its JSON form) that a policy version signs."""
    data = document.model_dump(mode="json") if isinstance(document, BaseModel) else document
    return json_digest(data)


class ReviewerKind(StrEnum):
    """Who signed a decision: a reviewer through the server, or an operator holding the key."""

    REVIEWER = "reviewer"
    OPERATOR = "operator"


class _Claims(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def payload(self) -> str:
        """The canonical JSON text a token over these claims carries."""
        return _CANONICAL.encode(self.model_dump(mode="json"))


# The JSON form of claims holds only strings, integers, booleans, null, lists and objects with string
# keys, on which canonical_json's normalising walk changes nothing: encoding with the same settings gives
# the same text (a test checks it) in a fraction of the time, and signing is on every decision's path.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class DecisionClaims(_Claims):
    """A decision, bound to its request and to the call it was made for."""

    typ: Literal["crossgate.decision.v1"] = "crossgate.decision.v1"
    request_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    fingerprint: Digest
    """Of the call as proposed (``{tool, args}``): the call the reviewer saw."""
    kind: DecisionKind
    args_fingerprint: Digest | None = None
    """Edit only: the fingerprint of the same tool with the edited arguments."""
    response_digest: Digest | None = None
    """Respond only: digest of the content returned as the tool's result."""
    message_digest: Digest | None = None
    """Reject only: digest of the message the model reads."""
    reviewer: str = Field(min_length=1)
    reviewer_kind: ReviewerKind
    channel: str | None = None
    decided_at: UtcTime
    apply_by: UtcTime | None = None
    """An approve or edit not applied by then has lapsed."""
    policy_version: int | None = Field(default=None, ge=1)
    approvals_required: int = Field(default=1, ge=1)
    """How many different reviewers had to approve the request when this was signed (the gate holds the
    request to it, whatever the store says now)."""

    @model_validator(mode="after")
    def _one_binding_for_its_kind(self) -> DecisionClaims:
        expected = {DecisionKind.EDIT: "args_fingerprint", DecisionKind.RESPOND: "response_digest"}
        expected[DecisionKind.REJECT] = "message_digest"
        for kind in (DecisionKind.EDIT, DecisionKind.RESPOND, DecisionKind.REJECT):
            name = expected[kind]
            if (getattr(self, name) is not None) != (self.kind is kind):
                raise ValueError(f"{name} is set exactly for {kind.value} decisions")
        return self

    @property
    def runs_fingerprint(self) -> str | None:
        """The fingerprint of the arguments this decision lets run; None for reject and respond."""
        if self.kind is DecisionKind.APPROVE:
            return self.fingerprint
        if self.kind is DecisionKind.EDIT:
            return self.args_fingerprint
        return None

    def differences(self, decision: AnyDecision) -> list[str]:
        """Names of what ``decision`` (as stored) says otherwise than these claims; empty if nothing."""
        found = [] if decision.kind is self.kind else ["kind"]
        if decision.fingerprint is not None and decision.fingerprint != self.fingerprint:
            found.append("fingerprint")
        if decision.reviewer is not None and decision.reviewer != self.reviewer:
            found.append("reviewer")
        if isinstance(decision, Edit) and fingerprint(self.tool, decision.args) != self.args_fingerprint:
            found.append("edited arguments")
        if isinstance(decision, Reject) and json_digest(decision.message) != self.message_digest:
            found.append("message")
        if isinstance(decision, Respond) and json_digest(decision.content) != self.response_digest:
            found.append("response")
        return found


class RuleMatch(_Claims):
    """Which calls a standing rule covers."""

    tool: str
    match: RememberMatch
    arg_patterns: dict[str, str] = Field(default_factory=dict)
    args_fingerprint: str | None = None
    agent: str | None = None
    framework: str | None = None


class RuleScope(_Claims):
    """How long, and for which run or session, a standing rule stands."""

    scope: RememberScope
    run: str | None = None
    session: str | None = None


class StandingRuleClaims(_Claims):
    """A standing rule: its match, verdict and scope, so none of them can be widened in the store."""

    typ: Literal["crossgate.standing_rule.v1"] = "crossgate.standing_rule.v1"
    rule_id: str = Field(min_length=1)
    verdict: Literal[VerdictKind.ALLOW, VerdictKind.DENY]
    match: RuleMatch
    scope: RuleScope
    message: str | None = None
    expires_at: UtcTime | None = None
    created_by: str | None = None
    created_at: UtcTime
    source_request: str | None = None


class PolicyVersionClaims(_Claims):
    """One version of the policy, by the digest of its canonical document."""

    typ: Literal["crossgate.policy_version.v1"] = "crossgate.policy_version.v1"
    version: int = Field(ge=1)
    digest: Digest
    created_by: str = Field(min_length=1)
    created_at: UtcTime


class CheckpointClaims(_Claims):
    """The audit chain's head: the last event's sequence number and hash, at a moment."""

    typ: Literal["crossgate.audit_checkpoint.v1"] = "crossgate.audit_checkpoint.v1"
    seq: int = Field(ge=0)
    head_hash: Digest
    at: UtcTime
    authored: bool = False
    """True when the signer appended event ``seq`` itself (a decision, a policy version), so that event is
    the authority's own; False for whatever head the store showed (see :mod:`crossgate.checkpoints`)."""


class CredentialClaims(_Claims):
    """A stored reviewer or agent credential: who it is, the digest of its token, and what it may do.

    Signed so that a writer of the store cannot add a credential of its own (see :mod:`crossgate.credentials`).
    """

    typ: Literal["crossgate.credential.v1"] = "crossgate.credential.v1"
    id: str = Field(min_length=1)
    kind: Literal["reviewer", "agent"]
    name: str = Field(min_length=1)
    token_sha256: Digest
    frameworks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    admin: bool = False
    created_by: str = Field(min_length=1)
    created_at: UtcTime


class StateHeadClaims(_Claims):
    """The newest state the authority vouches for, until ``expires_at``: what a rollback cannot hide.

    A gate remembers the newest head it has seen (in its own file) and refuses a policy version older than
    the head's, a standing rule the head names revoked and an approval the head names consumed; past
    ``expires_at`` with nothing newer, it refuses everything (a frozen store).
    """

    typ: Literal["crossgate.state_head.v1"] = "crossgate.state_head.v1"
    issued_at: UtcTime
    expires_at: UtcTime
    policy_version: int | None = Field(default=None, ge=1)
    """The store's current signed policy version; None while none is stored."""
    policy_digest: Digest | None = None
    rules_version: int = Field(ge=0)
    """The store's ``rules_version`` when signed (for people: any writer can move it)."""
    revoked_rules: tuple[str, ...] = ()
    """Ids of revoked standing rules that would still stand otherwise (not past their own expiry), sorted."""
    audit_seq: int = Field(ge=0)
    audit_hash: Digest
    consumed: str
    """A Bloom filter (:mod:`crossgate.authority.consumed`, base64url) of the request ids of approvals applied
    whose signed ``apply_by`` has not passed, or that never lapse: an approval in it never runs again. The
    default apply window (one hour) bounds how many it holds."""
    consumed_count: int = Field(ge=0)
    """How many approvals the filter holds (for people, and its expected false-positive rate)."""
    consumed_until: UtcTime | None = None
    """The latest ``apply_by`` among them; None while one never lapses or the filter is empty."""
    revoked_credentials: tuple[str, ...] = ()
    """Ids of the stored reviewer and agent credentials revoked or rotated away, sorted: a server refuses them
    even when the store shows their rows live again (see :mod:`crossgate.credentials`)."""

    @model_validator(mode="after")
    def _digest_with_version(self) -> StateHeadClaims:
        if (self.policy_version is None) != (self.policy_digest is None):
            raise ValueError("policy_version and policy_digest are set together")
        if self.expires_at <= self.issued_at:
            raise ValueError("expires_at is after issued_at")
        filter_bytes(self.consumed)
        return self

    def consumes(self, request_id: str) -> bool:
        """True when this head names ``request_id``'s approval consumed (or, rarely, a false positive)."""
        return in_filter(filter_bytes(self.consumed), request_id)


Claims = (
    DecisionClaims | StandingRuleClaims | PolicyVersionClaims | CheckpointClaims | CredentialClaims | StateHeadClaims
)
CLAIMS_TYPES: dict[str, type[Claims]] = {
    cls.model_fields["typ"].default: cls
    for cls in (
        DecisionClaims,
        StandingRuleClaims,
        PolicyVersionClaims,
        CheckpointClaims,
        CredentialClaims,
        StateHeadClaims,
    )
}
"""Each claims class by its ``typ``."""


def decision_claims(
    request: ApprovalRequest,
    decision: AnyDecision,
    *,
    reviewer_kind: ReviewerKind = ReviewerKind.REVIEWER,
    policy_version: int | None = None,
) -> DecisionClaims:
    """The claims to sign for ``decision`` as recorded on ``request`` (reviewer and decided_at set).

    ``apply_by`` follows from the request's ``apply_within_seconds`` for an approve or edit.
    """
    if not decision.reviewer or decision.decided_at is None:
        raise InvalidDecisionError("only a recorded decision (with reviewer and decided_at) can be signed")
    apply_by = None
    if request.apply_within_seconds is not None and decision.kind in (DecisionKind.APPROVE, DecisionKind.EDIT):
        apply_by = decision.decided_at + timedelta(seconds=request.apply_within_seconds)
    return DecisionClaims(
        request_id=request.id,
        tool=request.call.tool,
        fingerprint=request.fingerprint,
        kind=decision.kind,
        args_fingerprint=fingerprint(request.call.tool, decision.args) if isinstance(decision, Edit) else None,
        response_digest=json_digest(decision.content) if isinstance(decision, Respond) else None,
        message_digest=json_digest(decision.message) if isinstance(decision, Reject) else None,
        reviewer=decision.reviewer,
        reviewer_kind=reviewer_kind,
        channel=decision.channel,
        decided_at=decision.decided_at,
        apply_by=apply_by,
        policy_version=policy_version,
        approvals_required=request.approvals_required,
    )


def standing_rule_claims(rule: StandingRule) -> StandingRuleClaims:
    """The claims to sign for ``rule``; revocation is not part of them (see docs/security.md)."""
    return StandingRuleClaims(
        rule_id=rule.id,
        verdict=rule.effect,
        match=RuleMatch(
            tool=rule.tool,
            match=rule.match,
            arg_patterns=dict(rule.arg_patterns),
            args_fingerprint=rule.args_fingerprint,
            agent=rule.agent,
            framework=rule.framework,
        ),
        scope=RuleScope(scope=rule.scope, run=rule.run, session=rule.session),
        message=rule.message,
        expires_at=rule.expires_at,
        created_by=rule.created_by,
        created_at=rule.created_at,
        source_request=rule.source_request,
    )


def policy_version_claims(
    *, version: int, document: Mapping[str, Any] | BaseModel, created_by: str, created_at: datetime
) -> PolicyVersionClaims:
    """The claims to sign for version ``version`` of the policy ``document``."""
    return PolicyVersionClaims(
        version=version, digest=policy_digest(document), created_by=created_by, created_at=created_at
    )

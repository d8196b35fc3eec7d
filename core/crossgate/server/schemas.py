"""Bodies the HTTP API accepts and returns (they make up the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from crossgate.errors import ConfigurationError
from crossgate.fingerprint import fingerprint, require_json
from crossgate.model import (
    ApprovalRequest,
    Approve,
    DecisionKind,
    Edit,
    JsonObject,
    ParkedRun,
    ParkedRunStatus,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    Respond,
    StandingRule,
    VerdictKind,
)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _DecisionIn(_In):
    """Text and arguments are bounded by the queue's input limits (``crossgate.limits``), not here."""

    remember: Remember | None = None
    note: str | None = Field(default=None, description="For the audit log; the model never sees it.")
    fingerprint: str | None = Field(default=None, description="The fingerprint the reviewer saw; checked.")


class ApproveIn(_DecisionIn):
    """Run the call as proposed."""

    kind: Literal["approve"]


class EditIn(_DecisionIn):
    """Run the same tool with these arguments (validated against the request's args_schema)."""

    kind: Literal["edit"]
    args: JsonObject


class RejectIn(_DecisionIn):
    """Do not run the call; the message is what the model reads."""

    kind: Literal["reject"]
    message: str = Field(min_length=1)


class RespondIn(_DecisionIn):
    """Return ``content`` as the tool's result without running the tool."""

    kind: Literal["respond"]
    content: str


DecisionIn = Annotated[ApproveIn | EditIn | RejectIn | RespondIn, Field(discriminator="kind")]


def to_decision(body: ApproveIn | EditIn | RejectIn | RespondIn) -> Approve | Edit | Reject | Respond:
    """The core decision for an API body."""
    common = {"remember": body.remember, "note": body.note, "fingerprint": body.fingerprint}
    if isinstance(body, ApproveIn):
        return Approve(**common)
    if isinstance(body, EditIn):
        return Edit(args=body.args, **common)
    if isinstance(body, RejectIn):
        return Reject(message=body.message, **common)
    return Respond(content=body.content, **common)


BATCH_LIMIT = 100
"""The most decisions one ``POST /api/decisions`` may carry."""


class BatchItemIn(_In):
    """One decision of a batch: the request it is for, and the same body the single endpoint takes."""

    request_id: str = Field(min_length=1, max_length=200)
    decision: DecisionIn


class BatchIn(_In):
    """Several decisions at once; each is decided on its own, as if sent to the single endpoint."""

    items: list[BatchItemIn] = Field(min_length=1, max_length=BATCH_LIMIT)


class RequestOut(ApprovalRequest):
    """A request as the API shows it, with what the calling reviewer may do with it."""

    can_decide: bool = Field(default=False, description="True if the caller may decide it now.")
    decide_blocked: str | None = Field(default=None, description="Why the caller may not decide it, if not.")
    remember_covers: str | None = Field(
        default=None,
        description="For a remembered decision: which later calls its standing rule covers, in words "
        '(`delete_ticket with exactly {"id": "t3"}, forever`).',
    )
    still_asks: str | None = Field(
        default=None,
        description="In the answer to a remembered approve or edit: the policy rule that still asks for calls "
        "like this one (a rule marked `rememberable: false`; `default` when none matched), else null.",
    )


class RequestPage(BaseModel):
    """One page of requests; pass ``next_cursor`` as ``cursor`` for the next."""

    items: list[RequestOut]
    next_cursor: str | None = None


class RuleIn(_In):
    """A standing rule to add by hand (``remember`` on a decision adds one too)."""

    effect: Literal[VerdictKind.ALLOW, VerdictKind.DENY]
    tool: str = Field(min_length=1, max_length=200)
    match: RememberMatch = RememberMatch.TOOL
    arg_patterns: dict[str, str] = Field(default_factory=dict)
    args: JsonObject | None = Field(default=None, description="For match=exact: the arguments the call must have.")
    agent: str | None = None
    framework: str | None = None
    scope: RememberScope = RememberScope.FOREVER
    run: str | None = None
    session: str | None = None
    message: str | None = None
    expires_at: datetime | None = None

    def rule_fields(self) -> dict[str, Any]:
        """Keyword arguments for ``ReviewQueue.new_rule``; ConfigurationError when the fields contradict."""
        if (self.match is RememberMatch.EXACT) != (self.args is not None):
            raise ConfigurationError("args belong with match=exact, and match=exact needs args")
        if (self.match is RememberMatch.PATTERN) != bool(self.arg_patterns):
            raise ConfigurationError("arg_patterns belong with match=pattern, and match=pattern needs them")
        if (self.scope is RememberScope.RUN) != (self.run is not None):
            raise ConfigurationError("run belongs with scope=run, and scope=run needs a run")
        if (self.scope is RememberScope.SESSION) != (self.session is not None):
            raise ConfigurationError("session belongs with scope=session, and scope=session needs a session")
        if self.scope is RememberScope.ONCE:
            raise ConfigurationError("a standing rule cannot have scope=once; once is a plain decision")
        fields = self.model_dump(exclude={"args"})
        if self.args is not None:
            require_json(self.args)
            fields["args_fingerprint"] = fingerprint(self.tool, self.args)
        return fields


class RulesOut(BaseModel):
    items: list[StandingRule]


class LinksOut(BaseModel):
    """Signed decision links for one request, issued to the calling reviewer."""

    approve: str | None = None
    reject: str | None = None
    expires_at: datetime


class HealthOut(BaseModel):
    status: Literal["ok"] = "ok"
    store: str
    head: int
    pending: int
    notifications: dict[str, int]
    channels: dict[str, dict[str, int]] = {}
    """Per channel (``slack``, ``slack-escalation``, ``email``): events ``delivered``, ``retries`` while it
    was unavailable, and ``failed`` (given up on)."""


class AuditOut(BaseModel):
    ok: bool
    checked: int
    problem: str | None = None
    bad_seq: int | None = None


class ErrorOut(BaseModel):
    """Every error response: a snake_case code, a sentence, and the status."""

    error: str
    message: str
    status: int


class BatchErrorOut(ErrorOut):
    """Why one item of a batch was refused: the single endpoint's error body, plus the error's class name."""

    type: str = Field(description="The error's class name, e.g. NotFoundError or AlreadyDecidedError.")


class BatchDecided(BaseModel):
    """An item that was decided: the request as the single endpoint returns it."""

    request_id: str
    ok: Literal[True] = True
    request: RequestOut


class BatchRefused(BaseModel):
    """An item that was not decided, with the status the single endpoint would have answered."""

    request_id: str
    ok: Literal[False] = False
    error: BatchErrorOut


class BatchOut(BaseModel):
    """One result per item, in the order given."""

    results: list[BatchDecided | BatchRefused]


class WhoAmI(BaseModel):
    name: str
    scope: str
    channel: str


DECISION_KINDS = tuple(k.value for k in DecisionKind)


class CancelRequestIn(_In):
    """Close a pending request without a decision; the model reads ``reason`` as the call's rejection."""

    reason: str | None = Field(default=None, description="What the model reads (default: crossgate's own words).")


class ParkedRunOut(BaseModel):
    """A parked run as reviewers see it: everything but the SDK state, which is the resumer's alone."""

    id: str
    framework: str
    run: str
    request_ids: tuple[str, ...]
    metadata: JsonObject = Field(default_factory=dict)
    status: ParkedRunStatus
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None = None
    lease_until: datetime | None = None
    attempts: int = 0
    outcome: str | None = None
    state_bytes: int = Field(description="The size of the stored SDK state in bytes; 0 once pruned.")

    @classmethod
    def of(cls, parked: ParkedRun) -> ParkedRunOut:
        """``parked`` without its state."""
        fields = parked.model_dump(exclude={"state"})
        return cls.model_validate({**fields, "state_bytes": len(parked.state.encode())})


class ParkedRunsOut(BaseModel):
    items: list[ParkedRunOut]


class ParkedRunDetail(BaseModel):
    """One parked run, each of its requests, and the ids of those applied whose outcome was never recorded."""

    parked_run: ParkedRunOut
    requests: list[RequestOut]
    applied_without_outcome: list[str] = Field(
        description="Calls marked applied with no outcome recorded: a kill between the mark and the tool; "
        "each may or may not have run (never twice)."
    )

"""Bodies of the agent API (``/api/agent/v1``); every model inside is ``crossgate.model``'s, as JSON."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from crossgate.limits import MAX_SECONDS
from crossgate.model import (
    ALL_DECISIONS,
    ApprovalRequest,
    DecisionKind,
    JsonObject,
    ParkedRunStatus,
    ToolCall,
    Verdict,
)

ID = Field(min_length=1, max_length=200)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvaluateIn(_In):
    """A call to judge without recording anything but the verdict's own event."""

    call: ToolCall


class RequestIn(_In):
    """``submit`` (``store`` true) or ``prepare`` (false: the request is stored by ``POST /parked``)."""

    call: ToolCall
    args_schema: JsonObject | None = None
    description: str | None = None
    requested_by: str | None = None
    capabilities: tuple[DecisionKind, ...] = ALL_DECISIONS
    request_id: str | None = Field(default=None, min_length=1, max_length=200)
    timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    store: bool = True


class SubmissionOut(BaseModel):
    """The verdict, and the request when the verdict is ask (``stored`` false: prepared, not stored yet)."""

    verdict: Verdict
    request: ApprovalRequest | None = None
    stored: bool = True


class RequestListOut(BaseModel):
    """One page of the caller's own requests (it may hold fewer than ``limit``); pass ``next_cursor`` on."""

    items: list[ApprovalRequest]
    next_cursor: str | None = None


class CancelIn(_In):
    reason: str | None = None


class AppliedIn(_In):
    args: JsonObject | None = Field(default=None, description="The arguments about to run (approve and edit).")


class RefusalIn(_In):
    """A gate refused what let a call run (its signature did not verify): the decided request, or the call."""

    request_id: str | None = Field(default=None, min_length=1, max_length=200)
    call: ToolCall | None = None
    reason: str = Field(min_length=1, max_length=40)
    problem: str = Field(max_length=2000)
    message: str = Field(min_length=1, max_length=4000)
    rule: str | None = Field(default=None, max_length=200)


class OutcomeIn(_In):
    """What happened when the SDK got its answer; ``request_id`` null for a call the policy allowed outright."""

    request_id: str | None = Field(default=None, min_length=1, max_length=200)
    ran: bool
    result: str | None = None
    error: str | None = None
    call: ToolCall | None = None


class ParkIn(_In):
    """An SDK's paused state; ``new_requests`` are requests ``prepare`` returned, stored with the run."""

    framework: str = Field(min_length=1, max_length=200)
    run: str = Field(min_length=1, max_length=1000)
    request_ids: list[str] = Field(min_length=1, max_length=1000)
    state: str = Field(min_length=1)
    metadata: JsonObject | None = None
    new_requests: list[ApprovalRequest] = Field(default_factory=list, max_length=1000)


class ClaimIn(_In):
    owner: str = ID
    lease_seconds: float = Field(default=300.0, gt=0, le=7 * 24 * 3600, allow_inf_nan=False)


class FinishIn(_In):
    owner: str = ID
    status: ParkedRunStatus = ParkedRunStatus.RESUMED
    outcome: str | None = None


class ReadyOut(BaseModel):
    ready: bool


class StateHeadOut(BaseModel):
    """The store's newest signed state head; the agent's gate verifies ``token`` with its own pinned keys."""

    token: str | None


class PolicyOut(BaseModel):
    """The policy the server judges calls by; ``version`` is its digest (the ETag), ``rules_version`` the store's."""

    version: str | None
    document: dict[str, JsonValue]
    rules_version: int
    policy_version: int | None = None
    """The store's signed policy version evaluated; None for none stored, one refused, or a local policy."""
    local: bool = False
    """A local policy (development): a gate does not hold it to the state head's policy version."""

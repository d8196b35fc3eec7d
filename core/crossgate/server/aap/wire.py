"""AAP's wire format: durations, timestamps, errors, request bodies, and a crossgate request as AAP sees it.

AAP has two terminal answers a reviewer can give, approved and denied; crossgate has four decisions.
The mapping (docs/agents-over-http.md):

- approve: ``approved``, with ``expires_at``;
- reject: ``denied``, the rejection message as the note;
- edit: ``denied``, the note giving the edited arguments (that exact call is pre-approved once);
- respond: ``denied``, the reviewer's answer as the note;
- expired and cancelled requests: ``expired`` and ``cancelled``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crossgate.fingerprint import canonical_json
from crossgate.model import ApprovalRequest, Approve, Edit, JsonObject, Reject, RequestStatus, Respond
from crossgate.server.aap.registry import Submitted

DURATION = r"^[1-9][0-9]*(s|m|h)$"
_DURATION = re.compile(DURATION)
_UNIT = {"s": 1, "m": 60, "h": 3600}
MAX_WAIT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600.0
"""The longest approval window crossgate accepts: a longer ``timeout`` gets this ``deadline_at``."""
EDIT_NOTE = (
    "A reviewer edited this call instead of approving it as proposed. Call {tool} again with exactly these "
    "arguments, which are approved once for this agent: {args}"
)
RESPOND_NOTE = "A reviewer answered instead of running the tool. Their answer: {content}"


class AapError(Exception):
    """An AAP error: an HTTP status and the ``{type, code, message, param}`` of ``ErrorResponse``."""

    def __init__(self, status: int, type: str, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.code, self.message, self.param = status, type, code, message, param

    def body(self, request_id: str) -> JsonObject:
        """The ErrorResponse body."""
        error: JsonObject = {"type": self.type, "code": self.code, "message": self.message, "request_id": request_id}
        if self.param:
            error["param"] = self.param
        return {"error": error}


def invalid(message: str, param: str | None = None, code: str = "invalid_request") -> AapError:
    """A 400."""
    return AapError(400, "invalid_request", code, message, param)


def conflict(code: str, message: str) -> AapError:
    """A 409."""
    return AapError(409, "conflict", code, message)


def not_found(what: str = "request") -> AapError:
    """A 404: unknown, or not the caller's."""
    return AapError(404, "not_found", "not_found", f"no such {what} for this credential")


def seconds(duration: str, param: str) -> float:
    """A Duration (``30s``, ``30m``, ``24h``) in seconds."""
    if not isinstance(duration, str) or not _DURATION.match(duration) or len(duration) > 12:
        raise invalid("a duration is a positive whole number with s, m or h, such as 30s", param)
    return float(int(duration[:-1]) * _UNIT[duration[-1]])


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC, ending in Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class CreateIn(BaseModel):
    """CreateApprovalRequest (plus ``server``, which the AAP Python client sends for MCP tools)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    tool: str = Field(min_length=1)
    arguments: dict[str, Any]
    timeout: str = Field(pattern=DURATION)
    agent_reasoning: str | None = None
    context: dict[str, Any] | None = None
    server: str | None = Field(default=None, min_length=1)


class ProvisionIn(BaseModel):
    """ProvisionInstanceRequest."""

    model_config = ConfigDict(extra="forbid", strict=True)
    instance_name: str | None = Field(default=None, min_length=1)
    delivery: dict[str, Any] | None = None


class UpdateIn(BaseModel):
    """UpdateInstanceRequest."""

    model_config = ConfigDict(extra="forbid", strict=True)
    instance_name: str | None = Field(default=None, min_length=1)
    delivery: dict[str, Any] | None = None


class OutcomeIn(BaseModel):
    """The outcome report of a consumed approval."""

    model_config = ConfigDict(extra="forbid", strict=True)
    status: str = Field(pattern=r"^(succeeded|failed)$")
    note: str | None = Field(default=None, min_length=1)


M = TypeVar("M", bound=BaseModel)


def parse_body(model: type[M], body: Any) -> M:
    """``body`` as ``model``, or a 400 naming the first bad field; explicit nulls are refused."""
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    nulls = [k for k, v in body.items() if v is None and not (model is UpdateIn and k == "delivery")]
    if nulls:
        raise invalid(f"{nulls[0]} may not be null", nulls[0])
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise invalid(f"{where or 'body'}: {first['msg']}", where) from None


def approval_expiry(request: ApprovalRequest, decided_at: datetime, ttl: float) -> datetime:
    """When an approval stops letting its call start: the server's ttl, or the rule's shorter apply window."""
    limits = [ttl] + ([request.apply_within_seconds] if request.apply_within_seconds else [])
    return decided_at + timedelta(seconds=max(1.0, min(limits)))


def decision_of(request: ApprovalRequest, closed_at: datetime | None, ttl: float) -> JsonObject | None:
    """AAP's Decision for a crossgate request; None while it is pending."""
    decision = request.decision
    if decision is not None and request.decided_at is not None:
        at = request.decided_at
        if isinstance(decision, Approve):
            out: JsonObject = {"status": "approved", "decided_at": timestamp(at)}
            out["expires_at"] = timestamp(approval_expiry(request, at, ttl))
            if decision.note:
                out["note"] = decision.note
            return out
        return {"status": "denied", "decided_at": timestamp(at), "note": denial_note(request, decision)}
    if request.status in (RequestStatus.EXPIRED, RequestStatus.CANCELLED):
        at = max(closed_at or request.created_at, request.created_at)
        out = {"status": request.status.value, "decided_at": timestamp(at)}
        if request.closed_reason:
            out["note"] = request.closed_reason
        return out
    return None


def denial_note(request: ApprovalRequest, decision: Edit | Reject | Respond) -> str:
    """The note of a denied answer: the message, the edited arguments, or the reviewer's answer."""
    if isinstance(decision, Reject):
        return decision.message
    if isinstance(decision, Edit):
        return EDIT_NOTE.format(tool=request.call.tool, args=canonical_json(decision.args))
    return RESPOND_NOTE.format(content=decision.content)


def render(record: Submitted, request: ApprovalRequest | None, *, closed_at: datetime | None, ttl: float) -> JsonObject:
    """The ApprovalRequest object AAP returns."""
    out: JsonObject = {"id": record.id, **record.body}
    out["status"] = "pending"
    out["created_at"] = timestamp(record.created_at)
    out["deadline_at"] = timestamp(record.deadline_at)
    decision: JsonObject | None = None
    if record.immediate is not None:
        decision = {"status": record.immediate.status, "decided_at": timestamp(record.immediate.decided_at)}
        if record.immediate.note:
            decision["note"] = record.immediate.note
        if record.immediate.status == "approved":
            decision["expires_at"] = timestamp(record.immediate.decided_at + timedelta(seconds=ttl))
    elif request is not None:
        decision = decision_of(request, closed_at, ttl)
    if decision is not None:
        out["status"] = decision["status"]
        out["decision"] = decision
    if record.consumed_at is not None:
        consumption: JsonObject = {"consumed_at": timestamp(record.consumed_at)}
        if record.outcome is not None:
            consumption["outcome"] = record.outcome
        out["consumption"] = consumption
    return out

"""The steps every crossgate adapter takes, kept together and small so they move to a shared home as they are.

The request-id recipe, the neutral call of one SDK call, the check before a tool body runs (``mark_applied``
with the arguments about to run, which refuses a second application), and the bookkeeping of a decision
that runs nothing (reject, respond, expired, cancelled).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from crossgate import (
    AlreadyAppliedError,
    ApprovalRequest,
    ConfigurationError,
    CrossgateError,
    InvalidArgumentsError,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    ReviewQueue,
    StoreError,
    Submission,
    ToolCall,
    Verdict,
)
from crossgate.fingerprint import require_json
from crossgate.model import JsonObject
from crossgate.outcomes import already_applied_message
from crossgate.queue import REQUESTED_BY
from crossgate_pydantic_ai._capabilities import FRAMEWORK


@dataclass(slots=True)
class RunScope:
    """One crossgate run as the gated toolset sees it, bound to the toolset of one SDK run."""

    run: str
    session: str | None = None
    requested_by: str | None = None
    """Who the run acts for: every request it creates carries it, so that person cannot decide them."""
    context: JsonObject = field(default_factory=dict)
    """The app's context for the run's calls (``Gate(context=)``, ``run(call_context=)``)."""
    asked: dict[str, Submission] = field(default_factory=dict)
    """The ask submissions of this SDK run, by tool call id, for the gate to park."""


def request_id_for(run: str, agent: str, call_id: str) -> str:
    """The deterministic request id of one tool call, so a re-submitted call finds its request."""
    digest = hashlib.sha256(f"{run}\x1f{agent}\x1f{call_id}".encode()).hexdigest()
    return f"req_pa_{digest[:32]}"


def tool_call(tool: str, agent: str, args: JsonObject, call_id: str, scope: RunScope) -> ToolCall:
    """The neutral call: the app's context for the run, and who the run acts for (over any app key of that name)."""
    context = dict(scope.context)
    context.pop(REQUESTED_BY, None)
    if scope.requested_by is not None:
        context[REQUESTED_BY] = scope.requested_by
    return ToolCall(
        framework=FRAMEWORK,
        tool=tool,
        args=args,
        call_id=call_id,
        run=scope.run,
        session=scope.session,
        agent=agent,
        context=context,
    )


def deny_message(tool: str, verdict: Verdict) -> str:
    """What the model reads for a policy deny: the rule's reason, as an instruction."""
    return f"crossgate did not run {tool}: {verdict.reason or 'the policy does not allow this call'}"


def check_before_run(queue: ReviewQueue, request: ApprovalRequest, args: JsonObject) -> str | None:
    """Mark an approve or edit applied just before its tool body runs; None if it may run, else what the model reads.

    A second application (a resume replayed from the same history, a takeover after a crash) is refused
    and answered from the recorded outcome; a deny added since, or a lapsed approval, closes the request
    with its reason. A store error propagates: it is no answer about this call.
    """
    tool = request.call.tool
    try:
        queue.mark_applied(request, args=args, actor=FRAMEWORK)
    except AlreadyAppliedError:
        message = already_applied_message(tool, request.id, queue.outcome(request.id))
        queue.record_outcome(request, ran=False, error=f"not run again: request {request.id} was applied before")
        return message
    except StoreError:
        raise
    except (RequestCancelledError, RequestExpiredError) as exc:
        message = queue.get(request.id).closed_reason or f"crossgate did not run {tool}: {exc}"
        queue.record_outcome(request, ran=False, result=message)
        return message
    except CrossgateError as exc:
        message = f"crossgate did not run {tool}: {exc}"
        queue.record_outcome(request, ran=False, error=message)
        return message
    return None


def close_unrun(queue: ReviewQueue, request: ApprovalRequest, text: str) -> None:
    """Record a decision that runs nothing (reject, respond, or an expired or cancelled request), once."""
    if request.status is RequestStatus.APPLIED:
        return
    if request.status is RequestStatus.DECIDED:
        try:
            queue.mark_applied(request, actor=FRAMEWORK)
        except AlreadyAppliedError:
            return  # an earlier resume of this run recorded it (and its outcome) already
    queue.record_outcome(request, ran=False, result=text)


def app_context(context: Any) -> JsonObject:
    """The app's call context as given, checked to be a JSON object (it is stored and put in every call)."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise ConfigurationError(f"a call context must be a JSON object, got {type(context).__name__}")
    try:
        require_json(context)
    except InvalidArgumentsError as exc:
        raise ConfigurationError(f"a call context must be a JSON object: {exc}") from exc
    return dict(context)

"""Requests and decisions as AG-UI interrupts and resume entries, both ways.

AG-UI (the Agent User Interaction protocol) ends a paused run with ``RUN_FINISHED`` whose ``outcome`` is
``{"type": "interrupt", "interrupts": [...]}``; the client answers in the next run's ``resume`` array,
one ``{"interruptId", "status": "resolved" | "cancelled", "payload"}`` per interrupt. A crossgate request
is a ``tool_call`` interrupt: its ``id`` is the request id, its ``responseSchema`` says which decisions
the request allows, and its metadata carries the call and the fingerprint the answer is bound to.

The payload follows AG-UI's approve-with-edits pattern, extended to crossgate's four decisions:

- approve: ``{"approved": true}``
- edit: ``{"approved": true, "editedArgs": {...}}`` (a full replacement, offered only where edit is allowed)
- reject: ``{"approved": false, "message": "..."}`` (what the model reads)
- respond: ``{"approved": false, "response": "..."}`` (the tool's result; offered only where respond is allowed)

plus the optional ``approvedActionFingerprint`` (must be the request's), ``note`` and ``remember``. A
``cancelled`` entry closes the request as cancelled: the call does not run. Every payload
:func:`payload_of` writes validates against the request's :func:`response_schema`, and
:func:`decision_of` turns it back into the same decision.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import ValidationError

from crossgate.decisions import AnyDecision
from crossgate.errors import FingerprintMismatchError, InvalidDecisionError
from crossgate.model import (
    DECIDED_STATUSES,
    ApprovalRequest,
    Approve,
    DecisionKind,
    Edit,
    Reject,
    Remember,
    RequestStatus,
    Respond,
)
from crossgate.schemas import inline_refs

TOOL_CALL = "tool_call"
"""AG-UI's core reason for an interrupt bound to a tool call."""
UNBOUND_TOOL_CALL = "crossgate:tool_call"
"""The reason used when the SDK gave the call no id: AG-UI's ``tool_call`` requires ``toolCallId``."""
RESOLVED, CANCELLED = "resolved", "cancelled"


def interrupt_of(request: ApprovalRequest) -> dict[str, Any]:
    """The AG-UI ``Interrupt`` for a pending request."""
    call = request.call
    interrupt: dict[str, Any] = {
        "id": request.id,
        "reason": TOOL_CALL if call.call_id else UNBOUND_TOOL_CALL,
        "message": request.description or request.reason or f"May {call.tool} run with these arguments?",
        "responseSchema": response_schema(request),
        "metadata": {
            "crossgate": {
                "framework": call.framework,
                "tool": call.tool,
                "args": call.args,
                "agent": call.agent,
                "run": call.run,
                "reason": request.reason,
                "allowedDecisions": [k.value for k in request.allowed_decisions],
                "actionFingerprint": request.fingerprint,
            }
        },
    }
    if call.call_id:
        interrupt["toolCallId"] = call.call_id
    if request.expires_at is not None:
        interrupt["expiresAt"] = request.expires_at.isoformat()
    return interrupt


def interrupt_outcome(requests: list[ApprovalRequest]) -> dict[str, Any]:
    """``RUN_FINISHED``'s interrupt outcome for the pending ``requests`` (AG-UI requires at least one)."""
    if not requests:
        raise ValueError("an AG-UI interrupt outcome needs at least one pending request")
    return {"type": "interrupt", "interrupts": [interrupt_of(r) for r in requests]}


def response_schema(request: ApprovalRequest) -> dict[str, Any]:
    """JSON Schema of the payloads ``request`` accepts; ``editedArgs`` and ``response`` only where allowed."""
    allowed = set(request.allowed_decisions)
    properties: dict[str, Any] = {
        "approved": {"type": "boolean", "description": "true runs the call (with editedArgs, as edited)."},
        "approvedActionFingerprint": {"const": request.fingerprint, "description": "The call the person saw."},
        "message": {
            "type": "string",
            "minLength": 1,
            "pattern": r"\S",
            "description": "Not approved: what the model reads. Write it as an instruction.",
        },
        "note": {"type": "string", "description": "For the audit log."},
        "remember": _remember_schema(),
    }
    definitions: dict[str, Any] = {}
    if DecisionKind.EDIT in allowed:
        edited: dict[str, Any] = copy.deepcopy(dict(request.args_schema or {"type": "object"}))
        # The tool's "#/$defs/..." references resolve against the root, so its definitions move there.
        definitions = {key: edited.pop(key) for key in ("$defs", "definitions") if key in edited}
        edited.pop("$schema", None)
        properties["editedArgs"] = {**edited, "description": "Full replacement of the tool's arguments. Not merged."}
    if DecisionKind.RESPOND in allowed:
        properties["response"] = {"type": "string", "description": "Not approved: returned as the tool's result."}
    answers = [{"required": ["message"]}] + ([{"required": ["response"]}] if DecisionKind.RESPOND in allowed else [])
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": ["approved"],
        "additionalProperties": False,
        "allOf": [
            {
                "if": {"properties": {"approved": {"const": True}}},
                "then": {"not": {"anyOf": [{"required": ["message"]}, {"required": ["response"]}]}},
                "else": {"oneOf": answers, "not": {"required": ["editedArgs"]}},
            }
        ],
    }
    return {**schema, **definitions}


def payload_of(decision: AnyDecision) -> dict[str, Any]:
    """The ``resume`` payload that stands for ``decision``."""
    payload: dict[str, Any] = {"approved": isinstance(decision, Approve | Edit)}
    if isinstance(decision, Edit):
        payload["editedArgs"] = decision.args
    elif isinstance(decision, Reject):
        payload["message"] = decision.message
    elif isinstance(decision, Respond):
        payload["response"] = decision.content
    if decision.fingerprint is not None:
        payload["approvedActionFingerprint"] = decision.fingerprint
    if decision.note is not None:
        payload["note"] = decision.note
    if decision.remember is not None:
        payload["remember"] = decision.remember.model_dump(mode="json", exclude_none=True)
    return payload


def resume_entry_of(request: ApprovalRequest) -> dict[str, Any] | None:
    """The ``resume`` entry answering ``request``: resolved with its decision, cancelled if it closed
    without one (expired or cancelled: the call did not run); None while it is pending."""
    if request.status in DECIDED_STATUSES and request.decision is not None:
        return {"interruptId": request.id, "status": RESOLVED, "payload": payload_of(request.decision)}
    if request.status in (RequestStatus.EXPIRED, RequestStatus.CANCELLED):
        why = {"status": request.status.value, "reason": request.closed_reason}
        return {"interruptId": request.id, "status": CANCELLED, "metadata": {"crossgate": why}}
    return None


def decision_of(request: ApprovalRequest, entry: Mapping[str, Any]) -> AnyDecision | None:
    """The decision a ``resolved`` resume entry carries for ``request``; None for ``cancelled``.

    InvalidDecisionError (with the first problem) for an entry that is not for this request, has
    another status, or a payload the request's response schema refuses; FingerprintMismatchError when
    ``approvedActionFingerprint`` names another call. The queue makes its own checks on top.
    """
    if entry.get("interruptId") != request.id:
        raise InvalidDecisionError(f"resume entry for {entry.get('interruptId')!r} does not answer {request.id}")
    status = entry.get("status")
    if status == CANCELLED:
        return None
    if status != RESOLVED:
        raise InvalidDecisionError(f"resume entry for {request.id}: status must be resolved or cancelled")
    payload = entry.get("payload")
    if not isinstance(payload, dict):
        raise InvalidDecisionError(f"resume entry for {request.id}: a resolved entry needs a payload object")
    fingerprint = payload.get("approvedActionFingerprint")
    if fingerprint is not None and fingerprint != request.fingerprint:
        raise FingerprintMismatchError(f"resume entry for {request.id} approves another call than the one asked about")
    # Fields first, each error at its place; then how they combine, in words (the schema's allOf says
    # the same to clients, but a validator can only report it as "not valid under any of the schemas").
    fields = {k: v for k, v in response_schema(request).items() if k != "allOf"}
    problem = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(fields).iter_errors(payload))
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or "payload"
        raise InvalidDecisionError(f"resume entry for {request.id}: {where}: {problem.message}")
    combination = _combination_problem(payload, DecisionKind.RESPOND in request.allowed_decisions)
    if combination is not None:
        raise InvalidDecisionError(f"resume entry for {request.id}: {combination}")
    try:
        return _decision(payload)
    except ValidationError as exc:
        raise InvalidDecisionError(f"resume entry for {request.id}: {exc.errors()[0]['msg']}") from exc


def _combination_problem(payload: Mapping[str, Any], respond: bool) -> str | None:
    answers = [k for k in ("message", "response") if k in payload]
    if payload["approved"]:
        return f"an approval carries no {answers[0]}" if answers else None
    if "editedArgs" in payload:
        return "editedArgs only comes with approved: true"
    if not answers:
        return "a refusal needs a message for the model" + (" or a response in place of the tool" if respond else "")
    return "give a message or a response, not both" if len(answers) > 1 else None


def _decision(payload: Mapping[str, Any]) -> AnyDecision:
    common: dict[str, Any] = {
        "fingerprint": payload.get("approvedActionFingerprint"),
        "note": payload.get("note"),
        "remember": Remember.model_validate(payload["remember"]) if "remember" in payload else None,
    }
    if payload["approved"]:
        if "editedArgs" in payload:
            return Edit(args=payload["editedArgs"], **common)
        return Approve(**common)
    if "response" in payload:
        return Respond(content=payload["response"], **common)
    return Reject(message=payload["message"], **common)


def _remember_schema() -> dict[str, Any]:
    schema = inline_refs(Remember.model_json_schema())
    schema.pop("title", None)
    return schema

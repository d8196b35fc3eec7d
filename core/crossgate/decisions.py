"""Checks a decision must pass before the queue records it (invariant 1: fail closed)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import jsonschema
import jsonschema_rs

from crossgate.errors import (
    AlreadyAppliedError,
    AlreadyDecidedError,
    ConfigurationError,
    DecisionNotAllowedError,
    FingerprintMismatchError,
    InvalidArgumentsError,
    InvalidDecisionError,
    RequestCancelledError,
    RequestExpiredError,
    SelfDecisionError,
)
from crossgate.fingerprint import canonical_json, require_json
from crossgate.model import (
    ApprovalRequest,
    Approve,
    DecisionKind,
    Edit,
    Reject,
    RememberMatch,
    RememberScope,
    RequestStatus,
    Respond,
)

AnyDecision = Approve | Edit | Reject | Respond


def check_open(request: ApprovalRequest, now: datetime) -> None:
    """Raise the precise conflict if ``request`` can no longer be decided."""
    if request.status is RequestStatus.DECIDED:
        raise AlreadyDecidedError(f"request {request.id} was already decided ({_kind(request)})")
    if request.is_applied:
        raise AlreadyAppliedError(f"request {request.id} was already decided ({_kind(request)}) and applied")
    if request.status is RequestStatus.EXPIRED:
        raise RequestExpiredError(f"request {request.id} expired at {request.expires_at}")
    if request.status is RequestStatus.CANCELLED:
        raise RequestCancelledError(f"request {request.id} was cancelled")
    if request.expires_at is not None and request.expires_at <= now:
        raise RequestExpiredError(f"request {request.id} expired at {request.expires_at.isoformat()}")


def check_decision(request: ApprovalRequest, decision: AnyDecision, reviewer: str) -> None:
    """Raise InvalidDecisionError (or a subclass) unless ``decision`` is acceptable for ``request``."""
    if not reviewer.strip():
        raise InvalidDecisionError("a decision needs a reviewer name")
    if decision.kind not in request.allowed_decisions:
        allowed = ", ".join(k.value for k in request.allowed_decisions)
        raise DecisionNotAllowedError(f"request {request.id} does not allow {decision.kind.value}; allowed: {allowed}")
    if decision.fingerprint is not None and decision.fingerprint != request.fingerprint:
        raise FingerprintMismatchError(
            f"the decision was made for fingerprint {decision.fingerprint[:12]}…, "
            f"but request {request.id} has {request.fingerprint[:12]}…"
        )
    if request.requested_by is not None and request.requested_by == reviewer:
        raise SelfDecisionError(f"{reviewer} submitted request {request.id} and cannot decide it")
    if isinstance(decision, Edit):
        validate_args(decision.args, request.args_schema)
    if decision.remember is not None:
        _check_remember(request, decision)


def validate_args(args: Any, schema: Mapping[str, Any] | None) -> None:
    """Raise InvalidArgumentsError unless ``args`` is a JSON object valid under ``schema``."""
    if not isinstance(args, dict):
        raise InvalidArgumentsError(f"arguments must be a JSON object, got {type(args).__name__}")
    require_json(args)
    check_args_schema(args, schema)


def check_args_schema(args: dict[str, Any], schema: Mapping[str, Any] | None) -> None:
    """:func:`validate_args` for arguments known to be a JSON object already (``parse_args`` gave them):
    raise InvalidArgumentsError unless ``schema`` accepts them."""
    if schema is None:
        return
    compiled = _compiled(schema)
    # jsonschema-rs answers valid-or-not in about a microsecond; the jsonschema package, which says
    # where and why, runs only for arguments that are refused.
    if compiled.fast is not None and compiled.fast.is_valid(args):
        return
    errors = sorted(compiled.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        raise InvalidArgumentsError(f"arguments fail the tool's schema at {where}: {first.message}")
    if compiled.fast is not None:
        # The two validators disagree: fail closed.
        raise InvalidArgumentsError("arguments fail the tool's schema")


def check_schema(schema: Mapping[str, Any] | None) -> None:
    """Raise ConfigurationError if ``schema`` is not a valid JSON Schema."""
    if schema is None:
        return
    cached = _cached(schema)
    if cached is not None and cached.checked:
        return
    try:
        text = canonical_json(schema)
    except InvalidArgumentsError as exc:
        raise ConfigurationError(f"args_schema is not JSON: {exc}") from exc
    _check_schema_text(text)
    _cache(schema, _compiled_text(text), checked=True)


# Checking a schema against its metaschema costs milliseconds, and adapters submit the same tool
# schemas again and again: valid schemas and their validators are cached by canonical text.
@lru_cache(maxsize=512)
def _check_schema_text(text: str) -> None:
    schema = json.loads(text)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"args_schema is not a valid JSON Schema: {exc.message}") from exc


@dataclass(frozen=True, slots=True)
class _Compiled:
    validator: Any
    """A ``jsonschema`` validator: the reference, and the source of error messages."""
    fast: Any
    """A ``jsonschema_rs`` validator of the same schema, or None where it cannot build one."""


def _compile(schema: Mapping[str, Any]) -> _Compiled:
    validator = jsonschema.validators.validator_for(schema)(schema)
    try:
        # Formats are annotations for the reference validator (no format checker), in every draft.
        fast = jsonschema_rs.validator_for(dict(schema), offline=True, validate_formats=False)
    except Exception:  # a schema it refuses (an unresolvable $ref, ...): the reference validator decides alone
        fast = None
    return _Compiled(validator, fast)


def _compiled(schema: Mapping[str, Any]) -> _Compiled:
    cached = _cached(schema)
    if cached is not None:
        return cached.compiled
    try:
        text = canonical_json(schema)
    except InvalidArgumentsError:
        return _compile(schema)
    return _cache(schema, _compiled_text(text), checked=False).compiled


@lru_cache(maxsize=512)
def _compiled_text(text: str) -> _Compiled:
    return _compile(json.loads(text))


@dataclass(frozen=True, slots=True)
class _Cached:
    schema: Mapping[str, Any]
    snapshot: Mapping[str, Any]
    compiled: _Compiled
    checked: bool


# An adapter passes the same schema object (a tool's parameters) on every call: cached by identity,
# a hit needs that very object (kept alive here, so its id is not reused) still equal to a snapshot
# taken when it was cached, so a schema changed in place is compiled again.
_CACHE: dict[int, _Cached] = {}
_CACHE_LIMIT = 512


def _cached(schema: Mapping[str, Any]) -> _Cached | None:
    cached = _CACHE.get(id(schema))
    if cached is not None and cached.schema is schema and cached.snapshot == schema:
        return cached
    return None


def _cache(schema: Mapping[str, Any], compiled: _Compiled, *, checked: bool) -> _Cached:
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    cached = _Cached(schema, copy.deepcopy(dict(schema)), compiled, checked)
    _CACHE[id(schema)] = cached
    return cached


def _check_remember(request: ApprovalRequest, decision: AnyDecision) -> None:
    remember = decision.remember
    assert remember is not None
    if isinstance(decision, Respond):
        raise InvalidDecisionError("respond cannot be remembered: a standing rule can only allow or deny")
    if remember.match is RememberMatch.PATTERN and not remember.arg_patterns:
        raise InvalidDecisionError("remember with match=pattern needs at least one argument pattern")
    if remember.match is not RememberMatch.PATTERN and remember.arg_patterns:
        raise InvalidDecisionError("argument patterns only apply to remember with match=pattern")
    if remember.scope is RememberScope.RUN and request.call.run is None:
        raise InvalidDecisionError(f"request {request.id} has no run, so it cannot be remembered for the run")
    if remember.scope is RememberScope.SESSION and request.call.session_key is None:
        raise InvalidDecisionError(f"request {request.id} has no session, so it cannot be remembered for the session")
    if remember.this_agent_only and request.call.agent is None:
        raise InvalidDecisionError(f"request {request.id} names no agent, so it cannot be remembered for its agent")


def _kind(request: ApprovalRequest) -> str:
    return request.decision.kind.value if request.decision else "no decision"


def decision_summary(decision: AnyDecision, original_args: Mapping[str, Any]) -> dict[str, Any]:
    """What the audit log records about a decision, including the diff of an edit."""
    summary: dict[str, Any] = {"kind": decision.kind.value, "note": decision.note}
    if isinstance(decision, Edit):
        summary["args"] = decision.args
        summary["diff"] = args_diff(original_args, decision.args)
    elif isinstance(decision, Reject):
        summary["message"] = decision.message
    elif isinstance(decision, Respond):
        summary["content"] = decision.content
    if decision.remember is not None:
        summary["remember"] = decision.remember.model_dump(mode="json")
    return summary


def args_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level argument changes: ``{"changed": {k: [old, new]}, "added": {...}, "removed": {...}}``."""
    changed = {
        k: [before[k], after[k]]
        for k in before.keys() & after.keys()
        if canonical_json(before[k]) != canonical_json(after[k])
    }
    return {
        "changed": dict(sorted(changed.items())),
        "added": {k: after[k] for k in sorted(after.keys() - before.keys())},
        "removed": {k: before[k] for k in sorted(before.keys() - after.keys())},
    }


DECISION_KINDS_THAT_RUN = (DecisionKind.APPROVE, DecisionKind.EDIT)

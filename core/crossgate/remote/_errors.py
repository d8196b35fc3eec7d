"""How the agent API's answers become crossgate's own errors on the agent's side.

The server's error body is ``{"error": <snake_case code>, "message", "status"}``; the code is the
snake_case name of the server-side class (``already_applied``, ``fingerprint_mismatch``), so the agent
gets the same class an in-process queue raises, and an adapter's ``except`` clauses work unchanged.
Failing to reach the server at all is :class:`ServerUnavailableError`, a ``StoreError``: the adapters
already treat a store they cannot reach as "nothing runs".
"""

from __future__ import annotations

import re

import crossgate.errors as errors
from crossgate.errors import (
    ConfigurationError,
    ConflictError,
    CrossgateError,
    InvalidArgumentsError,
    NotFoundError,
    ParkedRunClaimedError,
    StoreError,
)


class ServerUnavailableError(StoreError):
    """The review server could not be reached (or kept failing) until the client's deadline; nothing ran."""


class CredentialRefusedError(ConfigurationError):
    """The server refused the agent credential (HTTP 401 or 403): missing, revoked, or not an agent's."""


class NoOutcomeError(NotFoundError):
    """The request has no recorded outcome yet (HTTP 404 ``no_outcome``); ``RemoteQueue.outcome`` returns None."""


def _snake(name: str) -> str:
    stem = name.removesuffix("Error") or name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


_BY_CODE: dict[str, type[CrossgateError]] = {
    _snake(name): cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, CrossgateError) and cls is not CrossgateError
}
_BY_CODE.update(
    {
        "idempotency_conflict": ConflictError,
        "idempotency_key_required": ConfigurationError,
        "no_outcome": NoOutcomeError,
        "lease_held": ParkedRunClaimedError,
        "already_resumed": ParkedRunClaimedError,
        "invalid_request": InvalidArgumentsError,
        "body_too_large": InvalidArgumentsError,
        "bad_request": InvalidArgumentsError,
    }
)
_BY_STATUS: dict[int, type[CrossgateError]] = {404: NotFoundError, 409: ConflictError, 413: InvalidArgumentsError}


def error_class(code: str | None) -> type[CrossgateError] | None:
    """The crossgate error class an error body's code names (the server-side class, or one of its aliases)."""
    return _BY_CODE.get(code or "")


def error_for(status: int, body: object) -> CrossgateError:
    """The crossgate error for an error answer of the agent API."""
    code = message = None
    if isinstance(body, dict):
        code = body.get("error") if isinstance(body.get("error"), str) else None
        message = body.get("message") if isinstance(body.get("message"), str) else None
    text = f"the review server answered {status}: {message or code or 'no reason given'}"
    if status in (401, 403):
        return CredentialRefusedError(text)
    if status >= 500:
        return ServerUnavailableError(text)
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status) or InvalidArgumentsError
    return cls(message or text)

"""The server's own errors and the one function that maps every error to an HTTP status.

::

    CrossgateError
    ├── NotFoundError                  404
    ├── ConflictError (all)            409  already decided, applied, expired, cancelled, revoked
    ├── SelfDecisionError              403  (an InvalidDecisionError, but about who decides)
    ├── InvalidDecisionError (rest)    422
    ├── ConfigurationError             422  a bad cursor, limit, schema or rule
    ├── StoreError                     503
    ├── UnauthenticatedError           401  no token, or an unknown one
    ├── ForbiddenError                 403  out of the reviewer's scope
    ├── LinkTamperedError              403
    └── LinkExpiredError               410

Starlette's own refusals (an unknown route 404, a method the route does not take 405, a body too
large 413) and FastAPI's request validation (422) get the same body, through :func:`http_error_body`.
"""

from __future__ import annotations

import re
from http import HTTPStatus

from pydantic import ValidationError

from crossgate.errors import (
    ConfigurationError,
    ConflictError,
    CrossgateError,
    InvalidDecisionError,
    NotFoundError,
    SelfDecisionError,
    StoreError,
)
from crossgate.server.links import LinkExpiredError, LinkTamperedError


class UnauthenticatedError(CrossgateError):
    """No bearer token, or a token no reviewer holds."""


class ForbiddenError(CrossgateError):
    """The reviewer is known but the request or rule lies outside their scope."""


_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (ConflictError, 409),
    (SelfDecisionError, 403),
    (InvalidDecisionError, 422),
    (ConfigurationError, 422),
    (ValidationError, 422),
    (UnauthenticatedError, 401),
    (ForbiddenError, 403),
    (LinkTamperedError, 403),
    (LinkExpiredError, 410),
    (StoreError, 503),
)


def error_status(exc: Exception) -> tuple[int, str]:
    """HTTP status and a snake_case error code for ``exc`` (500, ``internal_error`` for anything unknown)."""
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status, _code(type(exc).__name__)
    return 500, "internal_error"


def error_body(exc: Exception) -> dict[str, object]:
    """The JSON body every error response carries: ``{"error": code, "message": text, "status": n}``."""
    status, code = error_status(exc)
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(body)"
        message = f"{where}: {first['msg']}"
    elif status == 500:
        message = "the server failed; see its log"
    else:
        message = str(exc)
    return {"error": code, "message": message, "status": status}


def _code(name: str) -> str:
    stem = name.removesuffix("Error") or name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    422: "invalid_request",
}


def http_error_body(status: int, message: str) -> dict[str, object]:
    """The error body for a refusal that is no crossgate error (``invalid_request`` for 422, as validation's)."""
    code = _HTTP_CODES.get(status)
    if code is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "error"
        code = re.sub(r"[^a-z0-9]+", "_", phrase.lower()).strip("_")
    return {"error": code, "message": message, "status": status}

"""Request bodies as the server accepts them: no larger than ``max_body_bytes``, and JSON parsed strictly.

``BodyLimit`` refuses a body over the limit with 413, from its ``Content-Length`` before reading it, and
from the bytes received for a body sent in chunks (which has no ``Content-Length``), so neither way
round the limit is open. ``JsonRoute`` parses JSON bodies with :func:`crossgate.fingerprint.parse_json`
instead of ``json.loads``: deep nesting, huge numbers, lone surrogates, repeated keys and text that is
not UTF-8 are a 422 with the documented error body, never a 400 ``{"detail": …}`` or a 500.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crossgate.errors import InvalidArgumentsError
from crossgate.fingerprint import ENVELOPE_DEPTH, MAX_JSON_DEPTH, parse_json
from crossgate.server.errors import http_error_body


class BodyTooLargeError(HTTPException):
    """A request body over ``max_body_bytes`` (HTTP 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than the server's limit of {limit} bytes")


class InvalidBodyError(HTTPException):
    """A JSON body the server does not accept (HTTP 422)."""

    def __init__(self, message: str) -> None:
        super().__init__(422, message)


class BodyLimit:
    """ASGI middleware: a 413 for any HTTP request body over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            error = BodyTooLargeError(self.max_bytes)
            response = JSONResponse(http_error_body(413, str(error.detail)), status_code=413)
            await response(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLargeError(self.max_bytes)  # the route's exception handler answers it
            return message

        await self.app(scope, limited, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) < 20 else None
    return None


class StrictJsonRequest(Request):
    """A request whose ``json()`` is :func:`crossgate.fingerprint.parse_json`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = parse_json(body, what="the request body", max_depth=MAX_JSON_DEPTH + ENVELOPE_DEPTH)
            except InvalidArgumentsError as exc:
                raise InvalidBodyError(str(exc)) from None
        return self._json


class JsonRoute(APIRoute):
    """The API's routes: JSON bodies parsed by :class:`StrictJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict

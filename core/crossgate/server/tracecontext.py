"""Incoming W3C ``traceparent``: the spans a request makes on the server join the caller's trace.

An agent's ``RemoteQueue``, the TypeScript client and an AAP runtime send the header; while an
OpenTelemetry SDK is configured on the server, its context is current for the request, so the queue's
spans (evaluate, submit, park, apply, outcome) are children of the agent's span and the trace context
stored with a request or a parked run is the agent's. With tracing off it only passes the request on.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from crossgate import tracing

_HEADER = tracing.TRACEPARENT.encode()


class TraceContext:
    """ASGI middleware that attaches the context of a request's ``traceparent`` header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        value = next((v for k, v in scope.get("headers", ()) if k == _HEADER), None)
        with tracing.attached(None if value is None else value.decode("latin-1")):
            await self.app(scope, receive, send)

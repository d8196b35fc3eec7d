"""The ``/metrics`` route and who may read it.

With a metrics token configured (``metrics_token_env`` in the tokens file, or ``crossgate serve
--metrics-token-env``), a scrape must send it as a bearer token, from anywhere: 401 otherwise. Without
one, only a loopback client may scrape: 403 otherwise. Both refusals carry the server's error body.
Behind a reverse proxy on the same host every client looks like loopback: configure a token there.
"""

from __future__ import annotations

import hmac
import ipaddress

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from crossgate.errors import CrossgateError
from crossgate.queue import ReviewQueue
from crossgate.server.errors import ForbiddenError, UnauthenticatedError, error_body
from crossgate.server.metrics.collector import StoreCollector
from crossgate.server.metrics.delivery import DeliveryMetrics
from crossgate.server.settings import ServerSettings, hash_token
from crossgate.server.state import server_state

router = APIRouter()
NO_TOKEN = "/metrics needs the metrics token as a bearer token (Authorization: Bearer <token>)"
NOT_LOOPBACK = (
    "/metrics answers loopback clients only; configure a metrics token (metrics_token_env, or "
    "crossgate serve --metrics-token-env) to scrape it from another host"
)


class Metrics:
    """One server's registry: the store's collector and the delivery metrics of its notification channels."""

    def __init__(self, queue: ReviewQueue) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(queue))
        self.delivery = DeliveryMetrics(self.registry)

    def text(self) -> bytes:
        """Every metric in Prometheus text format."""
        return generate_latest(self.registry)


def refusal(request: Request, settings: ServerSettings) -> CrossgateError | None:
    """Why this scrape is refused (the module docstring says when), or None to let it through."""
    expected = settings.metrics_token_sha256
    if expected is not None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(hash_token(token.strip()), expected):
            return UnauthenticatedError(NO_TOKEN)
        return None
    host = request.client.host if request.client else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return None if loopback else ForbiddenError(NOT_LOOPBACK)


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """The metrics in Prometheus text format; a refusal as the JSON error body (a scraper is no browser)."""
    state = server_state(request)
    if (refused := refusal(request, state.settings)) is not None:
        body = error_body(refused)
        headers = {"www-authenticate": "Bearer"} if body["status"] == 401 else None
        return JSONResponse(body, status_code=int(str(body["status"])), headers=headers)
    assert state.metrics is not None  # create_app makes them
    return Response(content=state.metrics.text(), media_type=CONTENT_TYPE_LATEST)

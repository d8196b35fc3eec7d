"""``create_app``: the review server as one FastAPI application around one ``ReviewQueue``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import ValidationError
from starlette.exceptions import HTTPException

import crossgate.server.admin_api as admin_api
import crossgate.server.agent_api as agent_api
import crossgate.server.agui_api as agui_api
import crossgate.server.api as api
import crossgate.server.linkpages as linkpages
import crossgate.server.metrics as metrics
import crossgate.server.operator_api as operator_api
import crossgate.server.pages as pages
import crossgate.server.review_api as review_api
import crossgate.server.stream as stream
from crossgate.authority.keys import TrustedKeys
from crossgate.credentials import Credentials
from crossgate.display import visible
from crossgate.errors import CrossgateError
from crossgate.queue import ReviewQueue
from crossgate.server.aap.routes import AAP_PATH, aap_asgi, create_aap_app, fallback_response, owns
from crossgate.server.access import Authenticator
from crossgate.server.bodies import BodyLimit
from crossgate.server.channels import Channel
from crossgate.server.errors import error_body, http_error_body
from crossgate.server.feed import ChangeFeed
from crossgate.server.links import LinkSigner
from crossgate.server.metrics import Metrics
from crossgate.server.settings import ServerSettings
from crossgate.server.state import ServerState
from crossgate.server.tracecontext import TraceContext
from crossgate.server.webhooks import Notifier
from crossgate.state_head import HeadSigner, StateHeadTimer
from crossgate.stores.credentials import CredentialStore

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


def _version() -> str:
    try:
        return version("crossgate")
    except PackageNotFoundError:
        return "0"


def create_app(
    queue: ReviewQueue,
    settings: ServerSettings | None = None,
    *,
    webhook_transport: httpx.AsyncBaseTransport | None = None,
    credential_keys: TrustedKeys | None = None,
) -> FastAPI:
    """The review server for ``queue``: JSON API under ``/api``, the reviewer page at ``/``, signed links, and
    the native agent API under ``/api/agent/v1``, and the Agent Approval Protocol (AAP v1) provider under ``/aap``.

    Stored credentials (``crossgate reviewers|agents``) are accepted when their signature verifies with
    ``credential_keys`` (default: the queue's authority's key). The app does not own the queue: closing it
    is the caller's job.
    """
    settings = settings or ServerSettings()
    signer = _remembering_signer(queue, settings)
    credentials = None
    if isinstance(queue.store, CredentialStore):
        credentials = Credentials(
            queue.store, authority=queue.authority, trusted=credential_keys, clock=queue.now, heads=signer
        )
    state = ServerState(
        queue=queue,
        settings=settings,
        auth=Authenticator(settings, credentials),
        signer=LinkSigner(settings.secret),
        feed=ChangeFeed(queue, sweep_seconds=settings.sweep_seconds),
    )
    state.metrics = Metrics(queue)
    state.notifier = Notifier(state, transport=webhook_transport)
    aap = create_aap_app(state, webhook_transport=webhook_transport)
    channels = state.channels = _channels(state)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await state.feed.start()
        assert state.notifier is not None
        await state.notifier.start()
        await aap.state.notifier.start()
        heads = _state_head_timer(queue, settings)
        for channel in channels:
            await channel.start()
        try:
            yield
        finally:
            for channel in channels:
                await channel.stop()
            if heads is not None:
                heads.stop()
            await aap.state.notifier.stop()
            await state.notifier.stop()
            await state.feed.stop()

    # /docs and /redoc serve their Swagger UI and ReDoc assets from the package, not from a CDN,
    # so they work on a closed network.
    app = FastAPIOffline(
        title=f"{settings.title} review server",
        version=_version(),
        description="One review queue for AI agent tool approvals: list, decide, remember, audit.",
        lifespan=lifespan,
    )
    app.state.crossgate = state
    if settings.slack is not None:
        from crossgate.server.slack.interactions import SlackApp
        from crossgate.server.slack.relay import SlackRelay
        from crossgate.server.slack.verify import SlackVerifier

        relay = next(c for c in channels if isinstance(c, SlackRelay))
        app.state.slack = SlackApp(relay, SlackVerifier(settings.slack.signing_secret))
    app.state.agent_api = agent_api.AgentApi(queue)
    app.state.agent_registry = aap.state.aap.registry  # agent credentials: the file's services and AAP instances
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(TraceContext)
    app.add_exception_handler(CrossgateError, _error_response)
    app.add_exception_handler(ValidationError, _error_response)
    app.add_exception_handler(RequestValidationError, _validation_response)
    app.add_exception_handler(HTTPException, _http_response)
    app.add_exception_handler(Exception, _error_response)
    # The review API first: its list and decision routes are the ones called most, and routes are matched
    # in order. No path of it matches one under /api/agent/v1 (the agents' own), so the order is free.
    app.include_router(api.router)
    app.include_router(operator_api.upkeep)  # /api/admin/<two segments>: never taken for admin_api's /{kinds}
    app.include_router(admin_api.router)
    app.include_router(operator_api.reading)
    app.include_router(review_api.router)
    app.include_router(agent_api.router)
    app.include_router(agui_api.router)
    app.include_router(stream.router)
    app.include_router(linkpages.router)
    if settings.slack is not None:
        from crossgate.server.slack.interactions import router as slack_router

        app.include_router(slack_router)
    app.include_router(pages.router)
    app.include_router(metrics.router)
    app.mount(AAP_PATH, aap_asgi(aap), name="aap")  # the AAP v1 provider: docs/agents-over-http.md
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _channels(state: ServerState) -> list[Channel]:
    """The configured channels besides webhooks: the Slack app and the e-mail notifier (imported only then)."""
    channels: list[Channel] = []
    if state.settings.slack is not None:
        from crossgate.server.slack.relay import SlackRelay

        channels.append(SlackRelay(state, state.settings.slack))
    if state.settings.email is not None:
        from crossgate.server.channels.email import EmailNotifier

        channels.append(EmailNotifier(state, state.settings.email))
    return channels


def _remembering_signer(queue: ReviewQueue, settings: ServerSettings) -> HeadSigner | None:
    """The queue's head signer, remembering its heads in the server's own file; None without the key."""
    signer = queue.head_signer
    if signer is None or signer.memory is not None:
        return signer
    from crossgate.adapter._heads import HeadFile, default_signer_file

    signer.keep_in(HeadFile(settings.state_head_file or default_signer_file(signer.authority.kid)))
    return signer


def _state_head_timer(queue: ReviewQueue, settings: ServerSettings) -> StateHeadTimer | None:
    """Sign a fresh state head every few seconds while the server runs, when the queue holds the key."""
    signer = queue.head_signer
    if signer is None:
        return None
    signer.lifetime_seconds = settings.state_head_lifetime_seconds
    timer = StateHeadTimer(signer, settings.state_head_every_seconds)
    timer.start()
    return timer


async def _error_response(request: Request, exc: Exception) -> Response:
    body = error_body(exc)
    status = int(str(body["status"]))
    if status == 500:
        log.error("crossgate server error on %s %s", request.method, request.url.path, exc_info=exc)
    if pages.wants_html(request):
        return pages.error_page(request, status, str(body["message"]))
    headers = {"www-authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


async def _http_response(request: Request, exc: Exception) -> Response:
    """Starlette's refusals (404 no route, 405 wrong method, 413 too large) with the documented body."""
    assert isinstance(exc, HTTPException)
    if owns(request.url.path):
        return fallback_response(exc)
    status = exc.status_code
    message = _http_message(request, exc)
    if status == 422 and request.url.path == api.BATCH_PATH:  # an unparseable batch: nothing in it was decided
        message += f"; {api.BATCH_REFUSED}"
    if pages.wants_html(request) and status != 405:
        return pages.error_page(request, status, message)
    return JSONResponse(http_error_body(status, message), status_code=status, headers=exc.headers)


def _http_message(request: Request, exc: HTTPException) -> str:
    path = visible(request.url.path)
    if len(path) > 200:
        path = path[:200] + "…"
    if exc.status_code == 404 and exc.detail == "Not Found":
        return f"no such resource: {request.method} {path}"
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("allow") or (exc.headers or {}).get("Allow")
        return f"{path} does not take {request.method}" + (f"; it takes {allowed}" if allowed else "")
    return str(exc.detail)


async def _validation_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ())) or "(request)"
    message = f"{where}: {first.get('msg')}"
    if request.url.path == api.BATCH_PATH:  # say what happened to the rest of the batch: nothing
        message += f"; {api.BATCH_REFUSED}"
    body = {"error": "invalid_request", "message": message, "status": 422}
    return JSONResponse(body, status_code=422)

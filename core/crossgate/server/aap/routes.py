"""The AAP v1 HTTP surface, mounted by ``create_app`` under ``/aap``: ``/aap/v1/instances``, ``/aap/v1/requests``.

Every response carries ``X-Request-ID``; every error is AAP's ``ErrorResponse``. Instance operations take
a provisioner token (tokens file, ``scope = "provisioner"``); request operations take an agent token
(an instance's credential, or an agent service's from the tokens file).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crossgate.errors import CrossgateError, InvalidArgumentsError
from crossgate.fingerprint import parse_json
from crossgate.model import JsonObject
from crossgate.server.aap.delivery import Notifier, check_delivery, verify_receiver
from crossgate.server.aap.journal import Journal
from crossgate.server.aap.provider import Provider
from crossgate.server.aap.registry import Delivery, Instance, MemoryRegistry, digest
from crossgate.server.aap.wire import (
    MAX_WAIT_SECONDS,
    AapError,
    CreateIn,
    OutcomeIn,
    ProvisionIn,
    UpdateIn,
    conflict,
    invalid,
    not_found,
    parse_body,
    seconds,
)
from crossgate.server.methods import allowed_methods
from crossgate.server.state import ServerState

log = logging.getLogger(__name__)
AAP_PATH = "/aap"
"""Where ``create_app`` mounts the provider: point an AAP client at ``<base_url>/aap``."""
REQUEST_ID = "x-request-id"


class RequestIds:
    """Give every exchange an id: ``request.state.aap_request_id`` and the ``X-Request-ID`` response header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = str(uuid.uuid4())
        scope["aap_request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != REQUEST_ID.encode()]
                message["headers"] = [*headers, (REQUEST_ID.encode(), rid.encode())]
            await send(message)

        await self.app(scope, receive, send_with_id)


class Unexpected:
    """Answer an error no handler maps (a bug) with AAP's 500 and log it once, here.

    It sits inside Starlette's outermost error middleware, which would send the 500 and then re-raise, so
    the main app's handlers would run again on an exchange this app had already answered.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.error("AAP provider error on %s %s", scope.get("method"), scope.get("path"), exc_info=exc)
            if not started:
                rid = str(scope.get("aap_request_id") or uuid.uuid4())
                await JSONResponse(internal().body(rid), status_code=500)(scope, receive, send)


def _rid(request: Request) -> str:
    return str(request.scope.get("aap_request_id") or uuid.uuid4())


def _headers(request: Request, exc: Exception, mapped: AapError) -> dict[str, str] | None:
    """The headers an error needs: a challenge with a 401, the path's methods with a 405 (RFC 9110)."""
    if mapped.status == 401:
        return {"www-authenticate": "Bearer"}
    if mapped.status != 405:
        return None
    allow = allowed_methods(request.app.routes, request.scope)
    if allow is None and isinstance(exc, HTTPException):
        allow = (exc.headers or {}).get("Allow")
    return {"allow": allow} if allow else None


def _error(request: Request, exc: Exception) -> JSONResponse:
    mapped = _map(exc)
    headers = _headers(request, exc, mapped)
    return JSONResponse(mapped.body(_rid(request)), status_code=mapped.status, headers=headers)


def _map(exc: Exception) -> AapError:
    if isinstance(exc, AapError):
        return exc
    if isinstance(exc, InvalidArgumentsError):
        return invalid(str(exc))
    if isinstance(exc, HTTPException):
        if exc.status_code == 404:
            return not_found("resource")
        if exc.status_code == 405:
            return AapError(405, "invalid_request", "method_not_allowed", "this path does not take that method")
        if exc.status_code == 413:
            return AapError(413, "invalid_request", "body_too_large", "the request body is too large")
        return AapError(exc.status_code, "invalid_request", "invalid_request", str(exc.detail) or "invalid request")
    if isinstance(exc, CrossgateError | ValidationError):
        from crossgate.server.errors import error_body

        body = error_body(exc)
        status = int(str(body["status"]))
        if status == 503:
            return AapError(503, "dependency", "store_unavailable", "the review store is unavailable")
        if status == 409:
            return conflict("conflict", str(body["message"]))
        if status < 500:
            return invalid(str(body["message"]))
    return internal()


def internal() -> AapError:
    """The 500 of an error nothing maps: a bug, logged by the provider."""
    return AapError(500, "internal", "internal_error", "the provider could not complete the operation")


def owns(path: str) -> bool:
    """True for a path under :data:`AAP_PATH` (one the mount missed, such as one with a newline in it)."""
    return path == AAP_PATH or path.startswith(AAP_PATH + "/")


def fallback_response(exc: HTTPException) -> Response:
    """The AAP error for a refusal the main app made on a path under :data:`AAP_PATH`."""
    rid = str(uuid.uuid4())
    mapped = _map(exc)
    return JSONResponse(mapped.body(rid), status_code=mapped.status, headers={REQUEST_ID: rid})


def create_aap_app(
    state: ServerState,
    registry: MemoryRegistry | None = None,
    *,
    webhook_transport: httpx.AsyncBaseTransport | None = None,
) -> FastAPI:
    """The AAP v1 provider over ``state.queue``; ``create_app`` mounts it at :data:`AAP_PATH`."""
    if registry is None:
        path = state.settings.aap_registry_path
        registry = MemoryRegistry(services=state.settings.agents, journal=Journal(path) if path else None)
    settings = state.settings
    provider = Provider(
        state.queue,
        registry,
        approval_ttl=settings.aap_approval_ttl_seconds,
        allow_private=settings.aap_webhook_allow_private,
        webhook_backoff=settings.webhook_backoff_seconds,
    )
    notifier = Notifier(provider, sweep_seconds=settings.sweep_seconds, transport=webhook_transport)
    if registry.stored_services is None and state.auth.credentials is not None:
        registry.stored_services = state.auth.stored_agent
    state.auth.instance_token = registry.is_instance_token
    app = FastAPI(title="crossgate AAP v1 provider", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.aap = provider
    app.state.notifier = notifier

    async def handle(request: Request, exc: Exception) -> Response:
        if _map(exc).status == 500:  # a crossgate error with no status of its own: a bug
            log.error("AAP provider error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(request, exc)

    # Handlers for these classes run in the error middleware that answers and stops; one for Exception
    # would run in the outermost one, which re-raises: Unexpected takes the rest.
    for known in (AapError, HTTPException, CrossgateError, ValidationError):
        app.add_exception_handler(known, handle)
    app.add_middleware(Unexpected)

    def token(request: Request) -> str:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AapError(401, "authentication", "credential_required", "send 'Authorization: Bearer <token>'")
        return value.strip()

    def refused(value: str, wanted: str) -> AapError:
        known = state.auth.reviewer_for(value) is not None or state.auth.is_agent_token(value)
        if known and registry.instance_for(value) is None and registry.is_instance_token(value):
            known = False  # a deleted instance's credential is simply invalid now
        if known:
            return AapError(403, "authorization", "wrong_credential", f"this operation takes {wanted}")
        return AapError(401, "authentication", "invalid_credential", "the credential is missing, revoked or invalid")

    def instance_of(request: Request) -> Instance:
        value = token(request)
        instance = registry.instance_for(value)
        if instance is None:
            raise refused(value, "an agent (instance) credential")
        return instance

    def provisioner_of(request: Request) -> str:
        value = token(request)
        agent = state.auth.agent_for(value)
        if agent is None or agent.scope != "provisioner":
            raise refused(value, "a provisioner token")
        return agent.name

    def key_of(request: Request) -> str:
        key = request.headers.get("idempotency-key", "")
        if not key:
            raise invalid("the Idempotency-Key header is required", "Idempotency-Key", "idempotency_key_required")
        return key

    async def body_of(request: Request) -> Any:
        raw = await request.body()
        return parse_json(raw or b"", what="the request body")

    def owned_instance(owner: str, instance_id: str) -> Instance:
        instance = registry.instance(instance_id)
        if instance is None or instance.owner != owner or instance.deleted_at is not None:
            raise not_found("instance")
        return instance

    def instance_view(instance: Instance) -> JsonObject:
        view: JsonObject = {"id": instance.id, "name": instance.name}
        if instance.delivery is not None:
            view["delivery"] = instance.delivery.public()
        return view

    async def verified(raw: object, instance_id: str) -> Delivery:
        delivery = check_delivery(raw, allow_private=provider.allow_private)
        await verify_receiver(notifier.http, delivery, instance_id, allow_private=provider.allow_private)
        return delivery

    # instances ----------------------------------------------------------------------------------
    @app.post("/v1/instances")
    async def provision(request: Request) -> Response:
        owner = provisioner_of(request)
        key = key_of(request)
        body = await body_of(request)
        parsed = parse_body(ProvisionIn, body)
        earlier = registry.provisioned(owner, key)
        if earlier is not None:  # a replay: no second verification, no new credential
            instance, issued, was = earlier
            if was != digest(body):
                raise conflict("idempotency_conflict", "this Idempotency-Key was used with other input")
            if instance.deleted_at is not None:
                raise conflict("instance_deleted", "the instance this key created was deleted")
            return JSONResponse({"instance": instance_view(instance), "credential": {"token": issued}})
        iid = str(uuid.uuid4())  # reserved for the verification message, usable only once created
        delivery = None if parsed.delivery is None else await verified(parsed.delivery, iid)
        with registry.lock:
            if registry.provisioned(owner, key) is not None:
                raise conflict("idempotency_conflict", "this Idempotency-Key is being used by another attempt")
            instance, issued = registry.provision(
                owner, key, digest(body), parsed.instance_name, instance_id=iid, delivery=delivery
            )
        return JSONResponse({"instance": instance_view(instance), "credential": {"token": issued}}, status_code=201)

    @app.get("/v1/instances/{instance_id}")
    async def get_instance(instance_id: str, request: Request) -> Response:
        return JSONResponse(instance_view(owned_instance(provisioner_of(request), instance_id)))

    @app.patch("/v1/instances/{instance_id}")
    async def update_instance(instance_id: str, request: Request) -> Response:
        owner = provisioner_of(request)
        key = key_of(request)
        instance = owned_instance(owner, instance_id)
        body = await body_of(request)
        parsed = parse_body(UpdateIn, body)
        if not body:
            raise invalid("name at least one field to update")
        earlier = registry.update_record(owner, instance.id, key)
        if earlier is not None:
            if earlier[0] != digest(body):
                raise conflict("idempotency_conflict", "this Idempotency-Key was used with other input")
            return JSONResponse(earlier[1])
        delivery = None if parsed.delivery is None else await verified(parsed.delivery, instance.id)
        with registry.lock:
            if registry.instance(instance.id) is None or owned_instance(owner, instance.id) is None:
                raise not_found("instance")  # deleted while the receiver was verified: deletion wins
            if "delivery" in body:
                instance = registry.set_delivery(instance.id, delivery)
            if parsed.instance_name is not None:
                instance = registry.rename(instance.id, parsed.instance_name)
            view = instance_view(instance)
            registry.remember_update(owner, instance.id, key, digest(body), view)
        return JSONResponse(view)

    @app.delete("/v1/instances/{instance_id}")
    async def delete_instance(instance_id: str, request: Request) -> Response:
        owner = provisioner_of(request)
        instance = registry.instance(instance_id)
        if instance is None or instance.owner != owner:
            raise not_found("instance")
        await run_in_threadpool(provider.retire, instance)
        return Response(status_code=204)

    # requests -----------------------------------------------------------------------------------
    @app.post("/v1/requests")
    async def create_request(request: Request) -> Response:
        instance = instance_of(request)
        key = key_of(request)
        body = await body_of(request)
        submission = parse_body(CreateIn, body)
        view, created = await run_in_threadpool(provider.create, instance, key, body, submission)
        return JSONResponse(view, status_code=201 if created else 200)

    @app.get("/v1/requests/{request_id}")
    async def get_request(request_id: str, request: Request, wait: str | None = None) -> Response:
        instance = instance_of(request)
        hold = None if wait is None else min(seconds(wait, "wait"), MAX_WAIT_SECONDS)
        record = provider.owned(instance, request_id)
        if hold:
            return JSONResponse(await provider.wait(record, hold))
        return JSONResponse(await run_in_threadpool(provider.view, record))

    @app.delete("/v1/requests/{request_id}")
    async def cancel_request(request_id: str, request: Request) -> Response:
        record = provider.owned(instance_of(request), request_id)
        return JSONResponse(await run_in_threadpool(provider.cancel, record))

    @app.post("/v1/requests/{request_id}/consume")
    async def consume_request(request_id: str, request: Request) -> Response:
        record = provider.owned(instance_of(request), request_id)
        key = key_of(request)
        return JSONResponse(await run_in_threadpool(provider.consume, record, key))

    @app.post("/v1/requests/{request_id}/outcome")
    async def report_outcome(request_id: str, request: Request) -> Response:
        record = provider.owned(instance_of(request), request_id)
        outcome = parse_body(OutcomeIn, await body_of(request))
        return JSONResponse(await run_in_threadpool(provider.report, record, outcome))

    return app


def aap_asgi(app: FastAPI) -> ASGIApp:
    """The provider wrapped in :class:`RequestIds`, outside its error handlers, so even a 500 has the header."""
    return RequestIds(app)

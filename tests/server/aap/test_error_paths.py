"""Every error path of the AAP door: the documented ``ErrorResponse``, no traceback in the log, nothing changed.

Each route is tried with bodies that are not JSON objects and with methods it does not take. The app
runs in process with ``raise_app_exceptions`` on, so an exception that escapes it (what uvicorn logs as
``Exception in ASGI application``) fails the test as well as any record the server logs at error level;
one case runs against a live uvicorn, whose own log is captured too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.aap import MemoryRegistry
from crossgate.server.app import create_app
from tests.server.aap.conftest import AAP, PROVISIONER, aap_settings, bearer, call, create, provision
from tests.server.conftest import POLICY
from tests.server.live import live_server

BAD_BODIES = {
    "not json": b"not json",
    "not utf-8": b"\xff\xfe{}",
    "latin-1 inside a string": b'{"tool": "caf\xe9"}',
    "truncated": b'{"tool": ',
    "a list": b"[1, 2]",
    "a string": b'"delete"',
    "NaN": b'{"instance_name": NaN}',
    "duplicate keys": b'{"instance_name": "a", "instance_name": "b"}',
    "deeply nested": b'{"a": ' * 5000 + b"1" + b"}" * 5000,
}
BODY_ROUTES = [
    ("POST", "/instances", "provisioner"),
    ("PATCH", "/instances/{instance}", "provisioner"),
    ("POST", "/requests", "instance"),
    ("POST", "/requests/{request}/outcome", "instance"),
]
PATHS = {
    "/instances": "POST",
    "/instances/{instance}": "DELETE, GET, PATCH",
    "/requests": "POST",
    "/requests/{request}": "DELETE, GET",
    "/requests/{request}/consume": "POST",
    "/requests/{request}/outcome": "POST",
}
WRONG_METHODS = ("PUT", "TRACE", "OPTIONS")


class Door:
    """An app in process with one instance and one pending request, and what it holds."""

    def __init__(self, http: httpx.AsyncClient, queue: ReviewQueue, registry: Any) -> None:
        self.http, self.queue, self.registry = http, queue, registry
        self.instance = self.token = self.request = ""

    async def setup(self) -> None:
        self.instance, self.token = await provision(self.http)
        r = await create(self.http, self.token, call())
        assert r.status_code == 201, r.text
        self.request = r.json()["id"]

    def path(self, template: str) -> str:
        return AAP + template.format(instance=self.instance, request=self.request)

    def credential(self, who: str) -> dict[str, str]:
        return bearer(PROVISIONER if who == "provisioner" else self.token)

    def held(self) -> tuple[object, ...]:
        """Everything a refused exchange must leave as it was: the queue's requests and log, the registry."""
        requests = self.queue.list_requests().items
        r = self.registry
        registry = (r._instances, r._provisions, r._updates, r._requests, r._keys)
        return (repr(requests), [e.seq for e in self.queue.events()], repr(registry))


@pytest.fixture
async def door() -> Iterator[Door]:
    queue = ReviewQueue(MemoryStore(), POLICY)
    app = create_app(queue, aap_settings())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            d = Door(client, queue, app.state.agent_registry)
            await d.setup()
            yield d
    queue.close()


def assert_error_response(r: httpx.Response, status: int, code: str | None = None) -> None:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) <= {"type", "code", "message", "param", "request_id"}
    assert {"type", "code", "message", "request_id"} <= set(error)
    assert error["request_id"] == r.headers["x-request-id"]
    if code is not None:
        assert error["code"] == code


def assert_quiet(caplog: pytest.LogCaptureFixture) -> None:
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [f"{r.name}: {r.getMessage()}" for r in loud]


@pytest.mark.parametrize(("method", "template", "who"), BODY_ROUTES)
@pytest.mark.parametrize("body", list(BAD_BODIES), ids=list(BAD_BODIES))
async def test_a_body_that_is_no_json_object_is_a_400_and_changes_nothing(
    door: Door, caplog: pytest.LogCaptureFixture, method: str, template: str, who: str, body: str
) -> None:
    before = door.held()
    headers = {**door.credential(who), "Idempotency-Key": f"bad-{body}", "Content-Type": "application/json"}
    with caplog.at_level(logging.INFO):
        r = await door.http.request(method, door.path(template), content=BAD_BODIES[body], headers=headers)
    assert_error_response(r, 400, "invalid_request")
    assert_quiet(caplog)
    assert door.held() == before


@pytest.mark.parametrize("template", list(PATHS))
@pytest.mark.parametrize("method", WRONG_METHODS)
async def test_a_method_the_path_does_not_take_is_a_405_with_allow(
    door: Door, caplog: pytest.LogCaptureFixture, method: str, template: str
) -> None:
    before = door.held()
    with caplog.at_level(logging.INFO):
        r = await door.http.request(method, door.path(template), headers=door.credential("instance"))
    assert_error_response(r, 405, "method_not_allowed")
    assert sorted(r.headers["allow"].split(", ")) == PATHS[template].split(", ")
    assert_quiet(caplog)
    assert door.held() == before


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "code"),
    [
        ("POST", "/requests", {}, 401, "credential_required"),
        ("POST", "/requests", {"Authorization": "Bearer nobody-holds-this"}, 401, "invalid_credential"),
        ("POST", "/instances", {"Authorization": f"Bearer {PROVISIONER}"}, 400, "idempotency_key_required"),
        ("GET", "/requests/no-such-request", None, 404, "not_found"),
        ("GET", "/no/such/path", None, 404, "not_found"),
        ("GET", "/requests/{request}?wait=forever", None, 400, "invalid_request"),
    ],
)
async def test_the_other_refusals_are_documented_quiet_and_change_nothing(
    door: Door,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    headers: dict[str, str] | None,
    status: int,
    code: str,
) -> None:
    before = door.held()
    with caplog.at_level(logging.INFO):
        r = await door.http.request(
            method, door.path(path), headers=door.credential("instance") if headers is None else headers, json={}
        )
    assert_error_response(r, status, code)
    assert_quiet(caplog)
    assert door.held() == before


async def test_a_bug_is_one_500_and_one_logged_traceback(
    door: Door, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected error answers the documented 500 and is logged once by the provider, not re-raised."""

    def broken(*_: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(MemoryRegistry, "instance_for", broken)
    with caplog.at_level(logging.INFO):
        r = await door.http.get(door.path("/requests/{request}"), headers=door.credential("instance"))
    assert_error_response(r, 500, "internal_error")
    logged = [rec for rec in caplog.records if rec.exc_info]
    assert len(logged) == 1 and logged[0].name == "crossgate.server.aap.routes"


@pytest.fixture
def uvicorn_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """uvicorn's own loggers do not propagate to the root: hand them caplog's handler."""
    logger = logging.getLogger("uvicorn")
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


@pytest.mark.slow
def test_a_live_server_logs_no_traceback_for_a_body_that_is_not_json(uvicorn_log: pytest.LogCaptureFixture) -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with live_server(create_app(queue, aap_settings())) as url:
        headers = {**bearer(PROVISIONER), "Idempotency-Key": "k", "Content-Type": "application/json"}
        for body in (b"not json", b"\xff\xfe"):
            r = httpx.post(f"{url}{AAP}/instances", content=body, headers=headers)
            assert_error_response(r, 400, "invalid_request")
        r = httpx.request("TRACE", f"{url}{AAP}/requests")
        assert_error_response(r, 405, "method_not_allowed")
        assert r.headers["allow"] == "POST"
    queue.close()
    assert_quiet(uvicorn_log)

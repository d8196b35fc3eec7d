"""Schemathesis against the OpenAPI document: generated requests to every operation cause no server error.

Bounded: a few dozen examples per operation. The event stream never ends, so it is left out here and
tested over a live server in test_live.py.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.app import create_app
from tests.server.conftest import POLICY, auth, make_settings, submit

queue = ReviewQueue(MemoryStore(), POLICY)
for framework in ("openai-agents", "claude-agent-sdk", "langgraph"):
    submit(queue, framework=framework)
app = create_app(queue, make_settings())
schema = schemathesis.openapi.from_asgi("/openapi.json", app).exclude(path="/api/stream")


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:
    response = case.call(headers=auth("alice"))
    case.validate_response(response, checks=(not_a_server_error,))


def test_document_lists_every_operation() -> None:
    paths = {p for p in app.openapi()["paths"] if not p.startswith("/api/agent/")}  # see agent_api/test_openapi.py
    assert paths == {
        "/api/health",
        "/api/me",
        "/api/requests",
        "/api/requests/{request_id}",
        "/api/requests/{request_id}/decision",
        "/api/requests/{request_id}/decision-schema",
        "/api/requests/{request_id}/links",
        "/api/requests/{request_id}/events",
        "/api/requests/{request_id}/cancel",
        "/api/decisions",
        "/api/ag-ui/interrupts",
        "/api/ag-ui/resume",
        "/api/rules",
        "/api/rules/{rule_id}",
        "/api/runs",
        "/api/runs/{parked_id}",
        "/api/runs/{parked_id}/retry",
        "/api/events",
        "/api/audit/verify",
        "/api/audit/head",
        "/api/audit/checkpoints",
        "/api/policy/versions",
        "/api/policy/versions/{version}",
        "/api/admin/policy/versions",
        "/api/admin/requests/expire",
        "/api/admin/runs/prune",
        "/api/stream",
        "/api/admin/{kinds}",
        "/api/admin/{kinds}/{name}/rotate",
        "/api/admin/{kinds}/{name}/revoke",
    }
    assert app.openapi()["components"]["securitySchemes"]["HTTPBearer"]["type"] == "http"


def test_the_batch_endpoint_is_documented_with_its_bodies() -> None:
    document = app.openapi()
    operation = document["paths"]["/api/decisions"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/BatchIn"}
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/BatchOut"}
    schemas = document["components"]["schemas"]
    items = schemas["BatchIn"]["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (1, 100)
    assert set(schemas["BatchItemIn"]["required"]) == {"request_id", "decision"}
    results = schemas["BatchOut"]["properties"]["results"]["items"]["anyOf"]
    assert {r["$ref"] for r in results} == {"#/components/schemas/BatchDecided", "#/components/schemas/BatchRefused"}
    assert set(schemas["BatchErrorOut"]["required"]) == {"error", "message", "status", "type"}

"""The agent API in the OpenAPI document (tag ``agent``), and schemathesis against it: no server errors."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.app import create_app
from tests.server.agent_api.conftest import AGENT, BILLING, agent_settings
from tests.server.conftest import POLICY, submit

queue = ReviewQueue(MemoryStore(), POLICY)
submit(queue)
app = create_app(queue, agent_settings())
schema = schemathesis.openapi.from_asgi("/openapi.json", app).include(path_regex=f"^{AGENT}/")

OPERATIONS = {
    "/policy": {"get"},
    "/state-head": {"get"},
    "/refusals": {"post"},
    "/evaluate": {"post"},
    "/requests": {"get", "post"},
    "/requests/{request_id}": {"get"},
    "/requests/{request_id}/cancel": {"post"},
    "/requests/{request_id}/applied": {"post"},
    "/outcomes": {"post"},
    "/requests/{request_id}/outcome": {"get"},
    "/expire": {"post"},
    "/parked": {"get", "post"},
    "/parked/{parked_id}": {"get"},
    "/parked/{parked_id}/ready": {"get"},
    "/parked/{parked_id}/claim": {"post"},
    "/parked/{parked_id}/finish": {"post"},
}


def test_every_operation_of_the_contract_is_documented_under_the_agent_tag() -> None:
    document = app.openapi()
    paths = {p.removeprefix(AGENT): ops for p, ops in document["paths"].items() if p.startswith(f"{AGENT}/")}
    assert {p: set(ops) for p, ops in paths.items()} == OPERATIONS
    for ops in paths.values():
        for operation in ops.values():
            assert operation["tags"] == ["agent"]
            assert {"agentCredential": []} in operation["security"]
    assert document["components"]["securitySchemes"]["agentCredential"]["scheme"] == "bearer"
    created = document["paths"][f"{AGENT}/requests"]["post"]
    assert created["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SubmissionOut"
    }
    assert any(p["name"] == "Idempotency-Key" for p in created["parameters"])


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:
    response = case.call(headers={"Authorization": f"Bearer {BILLING}", "Idempotency-Key": "schemathesis"})
    case.validate_response(response, checks=(not_a_server_error,))

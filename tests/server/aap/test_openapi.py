"""The provider against AAP's own openapi.yaml (vendored in fixtures/, see NOTICE), with schemathesis.

Their document, not one generated from crossgate's routes: every response must match its status,
headers and schema, no input may give a server error, and none may make the server log a traceback.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from crossgate import MemoryStore, ReviewQueue
from crossgate.server.app import create_app
from tests.server.aap.conftest import PROVISIONER, aap_settings
from tests.server.conftest import POLICY
from tests.server.live import live_server

pytestmark = pytest.mark.slow
SPEC = Path(__file__).parent / "fixtures" / "aap-openapi.yaml"
schema = schemathesis.openapi.from_path(SPEC)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


class Loud(logging.Handler):
    """Keeps every record at error level, or with a traceback, that the server logs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[str, str, Loud]]:
    """A live server's AAP base URL, an instance token, and what the server logged loudly."""
    queue = ReviewQueue(MemoryStore(), POLICY)
    loud = Loud()
    loggers = [logging.getLogger(name) for name in ("uvicorn", "crossgate")]
    for logger in loggers:  # uvicorn's loggers do not propagate to the root
        logger.addHandler(loud)
    try:
        with live_server(create_app(queue, aap_settings())) as url:
            headers = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": str(uuid.uuid4())}
            # a generous timeout: the first request to a fresh server on a loaded two-core CI machine took over 5 s
            r = httpx.post(f"{url}/aap/v1/instances", json={"instance_name": "fuzz"}, headers=headers, timeout=60)
            yield f"{url}/aap", r.json()["credential"]["token"], loud
    finally:
        for logger in loggers:
            logger.removeHandler(loud)
        queue.close()


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_conforms_to_aaps_openapi(case: schemathesis.Case, provider: tuple[str, str, Loud]) -> None:
    base, token, loud = provider
    credential = PROVISIONER if case.operation.path.startswith("/v1/instances") else token
    case.call_and_validate(base_url=base, headers={"Authorization": f"Bearer {credential}"}, checks=CHECKS)
    assert not loud.records, [f"{r.name}: {r.getMessage()}" for r in loud.records]


def test_the_fixture_is_their_document() -> None:
    text = SPEC.read_text(encoding="utf-8")
    assert "title: Agent Approval Protocol" in text and "Apache-2.0" in text
    for operation in ("provisionInstance", "getInstance", "updateInstance", "deleteInstance"):
        assert f"operationId: {operation}" in text
    for operation in ("createApprovalRequest", "getApprovalRequest", "cancelApprovalRequest"):
        assert f"operationId: {operation}" in text

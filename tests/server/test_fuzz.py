"""Fuzz every HTTP operation with hostile values (hypothesis): never a 5xx, every API refusal in the
documented body, and nothing stored after a refusal.

Operations come from the app itself (its OpenAPI document, plus the page and link routes it leaves
out of it), so a new route is fuzzed without touching this file. Values: deep nesting, huge numbers,
lone surrogates, NUL bytes, repeated keys, NaN, and (in one example per body) a 10 MB string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crossgate import ReviewQueue, open_store
from crossgate.limits import MAX_INT64
from tests.server.agent_api.conftest import AGENT, BILLING, agent_settings, bearer
from tests.server.conftest import POLICY, TOKENS, auth, submit

pytestmark = pytest.mark.slow

DEEP = "[" * 3000 + "]" * 3000
HOSTILE_JSON = [
    DEEP,
    '{"a": ' + "[" * 70 + "]" * 70 + "}",
    "9" * 5000,
    "1" + "0" * 400 + ".5",
    str(MAX_INT64 + 1),
    "-1",
    "1e400",
    "NaN",
    '"\\ud800"',
    '"a\\u0000b"',
    '"\\udc00\\ud800"',
    '{"kind": "approve", "kind": "reject", "message": "no"}',
    '{"id": "t1", "id": "t2"}',
    '"' + "\u202e\u3164p\u0430y" + '"',
    "null",
    "[]",
    "{}",
    '""',
    "true",
]
"""JSON texts, each dropped in where a body expects a value, or sent as the whole body."""
HOSTILE_TEXT = [
    "\ud800",
    "a\x00b",
    "9" * 5000,
    str(MAX_INT64 + 1),
    "-1",
    "",
    " ",
    "\u202e\u3164",
    "١٢",
    "../../etc/passwd",
    "%00",
    "x" * 20_000,
    "req_\udcff",
]
"""Texts for path segments, query values and headers."""
PLACEHOLDER = '"__hostile__"'


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    query: tuple[str, ...]
    body: str | None
    """A valid body with PLACEHOLDER where hostile values go (several places, one chosen per example)."""
    form: tuple[str, ...] = ()


def _skeletons(request_id: str) -> dict[str, list[str]]:
    """Valid bodies of each body-taking route, with one value replaced by PLACEHOLDER in each variant."""
    edit = '{"kind": "edit", "args": {"id": "t1", "x": __}, "note": "n"}'
    return {
        "/api/requests/{request_id}/decision": [
            edit.replace("__", PLACEHOLDER),
            '{"kind": "reject", "message": ' + PLACEHOLDER + "}",
            '{"kind": "respond", "content": ' + PLACEHOLDER + "}",
            '{"kind": "approve", "note": ' + PLACEHOLDER + "}",
            '{"kind": "approve", "fingerprint": ' + PLACEHOLDER + "}",
            '{"kind": "approve", "remember": {"scope": "forever", "match": "pattern", "arg_patterns": '
            + PLACEHOLDER
            + "}}",
            '{"kind": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        "/api/decisions": [
            '{"items": [{"request_id": "' + request_id + '", "decision": ' + edit.replace("__", PLACEHOLDER) + "}]}",
            '{"items": [{"request_id": ' + PLACEHOLDER + ', "decision": {"kind": "approve"}}]}',
            '{"items": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        "/api/rules": [
            '{"effect": "allow", "tool": "delete_ticket", "match": "exact", "args": {"id": ' + PLACEHOLDER + "}}",
            '{"effect": "deny", "tool": ' + PLACEHOLDER + "}",
            '{"effect": "deny", "tool": "x", "message": ' + PLACEHOLDER + "}",
            '{"effect": "deny", "tool": "x", "expires_at": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        "/api/requests/{request_id}/cancel": ['{"reason": ' + PLACEHOLDER + "}", PLACEHOLDER],
        "/api/admin/policy/versions": [
            '{"policy": ' + PLACEHOLDER + "}",
            '{"policy": {"rules": ' + PLACEHOLDER + "}}",
            '{"policy": {}, "source": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        "/api/admin/runs/prune": [
            '{"older_than_seconds": ' + PLACEHOLDER + "}",
            '{"older_than_seconds": 60, "dry_run": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        "/api/admin/{kinds}": [
            '{"name": ' + PLACEHOLDER + "}",
            '{"name": "x", "tools": ' + PLACEHOLDER + "}",
            '{"name": "x", "admin": ' + PLACEHOLDER + "}",
            PLACEHOLDER,
        ],
        **_agent_skeletons(request_id),
        "/api/ag-ui/resume": [
            '{"threadId": "run-1", "resume": [{"interruptId": "'
            + request_id
            + '", "status": "resolved", "payload": {"approved": true, "editedArgs": {"id": '
            + PLACEHOLDER
            + "}}}]}",
            '{"threadId": "run-1", "resume": [{"interruptId": "' + request_id + '", "status": "resolved", '
            '"payload": {"approved": false, "message": ' + PLACEHOLDER + "}}]}",
            '{"threadId": ' + PLACEHOLDER + ', "resume": []}',
            PLACEHOLDER,
        ],
    }


def _agent_skeletons(request_id: str) -> dict[str, list[str]]:
    """Bodies of the agent API (``/api/agent/v1``), sent with an agent's credential."""
    p = PLACEHOLDER

    def call(field: str = "args", value: str = '{"id": "t1"}') -> str:
        fields = {"framework": '"openai-agents"', "tool": '"delete_ticket"', "args": '{"id": "t1"}', "run": '"r1"'}
        fields["call_id"] = '"c1"'
        fields[field] = value
        return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"

    valid = call()
    refusal = '"reason": "bad_signature", "problem": "p", "message": "m"'
    run = '"framework": "openai-agents", "run": "r1"'
    return {
        f"{AGENT}/evaluate": [
            '{"call": ' + call("args", '{"id": ' + p + "}") + "}",
            '{"call": ' + call("tool", p) + "}",
            p,
        ],
        f"{AGENT}/requests": [
            '{"call": ' + call("args", '{"id": ' + p + "}") + "}",
            '{"call": ' + call("run", p) + "}",
            '{"call": ' + valid + ', "timeout_seconds": ' + p + "}",
            '{"call": ' + valid + ', "request_id": ' + p + "}",
            '{"call": ' + valid + ', "capabilities": ' + p + "}",
            '{"call": ' + valid + ', "args_schema": ' + p + "}",
            p,
        ],
        f"{AGENT}/requests/{{request_id}}/cancel": ['{"reason": ' + p + "}", p],
        f"{AGENT}/requests/{{request_id}}/applied": ['{"args": {"id": ' + p + "}}", '{"args": ' + p + "}", p],
        f"{AGENT}/outcomes": [
            '{"request_id": null, "ran": true, "result": ' + p + ', "call": ' + valid + "}",
            '{"request_id": ' + p + ', "ran": true}',
            '{"request_id": "' + request_id + '", "ran": ' + p + "}",
            p,
        ],
        f"{AGENT}/refusals": [
            '{"call": ' + valid + ", " + refusal.replace('"p"', p) + "}",
            '{"request_id": ' + p + ", " + refusal + "}",
            '{"call": ' + call("args", p) + ", " + refusal + "}",
            p,
        ],
        f"{AGENT}/parked": [
            "{" + run + ', "request_ids": ["' + request_id + '"], "state": ' + p + "}",
            '{"framework": "openai-agents", "run": ' + p + ', "request_ids": ["x"], "state": "s"}',
            "{" + run + ', "request_ids": ' + p + ', "state": "s"}',
            "{" + run + ', "request_ids": ["x"], "state": "s", "metadata": ' + p + "}",
            "{" + run + ', "request_ids": ["x"], "state": "s", "new_requests": ' + p + "}",
            p,
        ],
        f"{AGENT}/parked/{{parked_id}}/claim": [
            '{"owner": ' + p + "}",
            '{"owner": "w", "lease_seconds": ' + p + "}",
            p,
        ],
        f"{AGENT}/parked/{{parked_id}}/finish": [
            '{"owner": ' + p + "}",
            '{"owner": "w", "status": ' + p + "}",
            '{"owner": "w", "outcome": ' + p + "}",
            p,
        ],
    }


def operations(app: FastAPI) -> list[Operation]:
    """Every route the app answers: the OpenAPI document's operations, and the pages it leaves out."""
    found: list[Operation] = []
    for path, ops in app.openapi()["paths"].items():
        for method, op in ops.items():
            query = tuple(p["name"] for p in op.get("parameters", ()) if p["in"] == "query")
            found.append(Operation(method.upper(), path, query, "json" if "requestBody" in op else None))
    found += [
        Operation("GET", "/", (), None),
        Operation("GET", "/partials/pending", (), None),
        Operation("GET", "/requests/{request_id}", (), None),
        Operation("GET", "/history", (), None),
        Operation("GET", "/rules", (), None),
        Operation("GET", "/login", ("token",), None),
        Operation("POST", "/login", (), None, form=("token",)),
        Operation("POST", "/logout", (), None),
        Operation("GET", "/links/{token}", (), None),
        Operation("POST", "/links/{token}", (), None, form=("message", "decision")),
    ]
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, ReviewQueue]]:
    from crossgate.server.app import create_app

    db = Path(tmp_path_factory.mktemp("fuzz")) / "q.db"
    queue = ReviewQueue(open_store(str(db)), POLICY)
    app = create_app(queue, agent_settings())
    with TestClient(app, raise_server_exceptions=False, headers=auth("alice")) as client:
        yield client, queue
    queue.close()


def stored(queue: ReviewQueue) -> tuple[Any, ...]:
    requests = [r.model_dump() for r in queue.list_requests().items]
    return requests, queue.events(limit=10_000), queue.rules(include_revoked=True)


def _app() -> FastAPI:
    from crossgate import MemoryStore
    from crossgate.server.app import create_app

    return create_app(ReviewQueue(MemoryStore(), POLICY), agent_settings())


OPERATIONS = [op for op in operations(_app()) if op.path != "/api/stream"]  # a valid stream never ends
JSON_VALUES = st.one_of(
    st.sampled_from(HOSTILE_JSON),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(st.characters(exclude_categories=()), max_size=12).map(lambda t: json.dumps(t)),
    st.floats().map(lambda f: json.dumps(f)),
)
TEXT_VALUES = st.one_of(
    st.sampled_from(HOSTILE_TEXT), st.text(st.characters(exclude_categories=()), max_size=12), st.just("valid")
)


def _agent_headers(key: str) -> dict[str, str | bytes]:
    """An agent's credential in place of the reviewer's, and an ``Idempotency-Key`` (hostile, or a fresh one)."""
    return {**bearer(BILLING), "Idempotency-Key": key.encode("utf-8", "surrogatepass")}


def _check(response: Any, path: str) -> None:
    assert response.status_code < 500, (path, response.status_code, response.text[:500])
    if path.startswith("/api") and response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error", "message", "status"}, body
        assert body["status"] == response.status_code
    assert "Traceback" not in response.text


def _refused(response: Any) -> bool:
    if response.status_code >= 400:
        return True
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        results = body.get("results") if isinstance(body, dict) else None
        return bool(results) and all(not r["ok"] for r in results)
    return False


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_operation_refuses_hostile_values_cleanly(
    served: tuple[TestClient, ReviewQueue], operation: Operation, data: st.DataObject
) -> None:
    client, queue = served
    request = submit(queue, schema=None)
    segment = data.draw(st.one_of(st.just(request.id), TEXT_VALUES), label="path")
    path = re.sub(r"\{[a-z_]+\}", quote(segment.encode("utf-8", "surrogatepass"), safe=""), operation.path)
    params = {
        name: data.draw(TEXT_VALUES, label=name)
        for name in operation.query
        if data.draw(st.booleans(), label=f"send {name}")
    }
    query = "&".join(f"{quote(k)}={quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in params.items())
    url = f"{path}?{query}" if query else path
    kwargs: dict[str, Any] = {}
    if operation.body is not None:
        skeleton = data.draw(st.sampled_from(_skeletons(request.id)[operation.path]), label="body")
        value = data.draw(JSON_VALUES, label="value")
        text = skeleton.replace(PLACEHOLDER, value, 1)
        kwargs["content"] = text.encode("utf-8", "surrogatepass")
        kwargs["headers"] = {"content-type": "application/json"}
    elif operation.form:
        form = {name: data.draw(TEXT_VALUES, label=name) for name in operation.form}
        kwargs["content"] = "&".join(
            f"{k}={quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in form.items()
        ).encode()
        kwargs["headers"] = {"content-type": "application/x-www-form-urlencoded"}
    if operation.path.startswith(AGENT):
        key = data.draw(st.one_of(st.uuids().map(str), TEXT_VALUES), label="Idempotency-Key")
        headers = {**kwargs.get("headers", {}), **_agent_headers(key)}
        kwargs["headers"] = headers
    before = stored(queue)
    response = client.request(operation.method, url, follow_redirects=False, **kwargs)
    _check(response, operation.path)
    if _refused(response):
        assert stored(queue) == before, (operation, url, response.text[:300])


@pytest.mark.parametrize("path", sorted({op.path for op in OPERATIONS if op.body is not None}))
def test_a_10_mb_string_in_any_body_is_413_and_stores_nothing(
    served: tuple[TestClient, ReviewQueue], path: str
) -> None:
    client, queue = served
    request = submit(queue, schema=None)
    skeleton = _skeletons(request.id)[path][0]
    body = skeleton.replace(PLACEHOLDER, json.dumps("x" * 10_000_000), 1).encode()
    before = stored(queue)
    headers = _agent_headers("k-10mb") if path.startswith(AGENT) else {}
    url = path.replace("{request_id}", request.id).replace("{parked_id}", "park_x")
    response = client.post(url, content=body, headers=headers)
    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"] == "body_too_large"
    assert stored(queue) == before


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=TEXT_VALUES, last_event_id=TEXT_VALUES)
def test_the_stream_refuses_hostile_positions(
    served: tuple[TestClient, ReviewQueue], after: str, last_event_id: str
) -> None:
    client, _ = served
    if after.isascii() and after.isdigit() and len(after) < 30 and int(after) <= MAX_INT64:
        after = "-" + after  # a valid position would open an endless stream; the header is what is tried here
    header = last_event_id.encode("utf-8", "surrogatepass")
    url = f"/api/stream?after={quote(after.encode('utf-8', 'surrogatepass'), safe='')}"
    response = client.get(url, headers={"last-event-id": header, "authorization": f"Bearer {TOKENS['alice']}"})
    _check(response, "/api/stream")
    assert response.status_code == 422

"""The operator's routes: the signed log and policy versions for any reviewer, upkeep for admins only.

Every refusal is the documented error body with nothing stored; hostile values in the admin bodies, sent
with an admin's token (the route fuzz table sends a non-admin's), are a 4xx too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crossgate import Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.server.app import create_app
from crossgate.server.settings import reviewer
from tests.server.conftest import TOKENS, auth, make_settings, submit
from tests.server.test_fuzz import HOSTILE_JSON

ADMIN = {"Authorization": "Bearer root-admin-token-01"}
POLICY = Policy(rules=(PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*"),))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, ReviewQueue]]:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), authority=Authority.generate())
    reviewers = (*make_settings().reviewers, reviewer("root", "root-admin-token-01", admin=True))
    with TestClient(
        create_app(queue, make_settings(reviewers=reviewers, sweep_seconds=3600)), raise_server_exceptions=False
    ) as client:
        yield client, queue
    queue.close()


def _stored(queue: ReviewQueue) -> tuple[Any, ...]:
    store = queue.store
    requests = [r.model_dump() for r in queue.list_requests().items]
    return requests, store.list_events(), store.list_policy_versions(), store.list_parked_runs()


def _refused(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "message", "status"} and body["status"] == status
    return body


def test_an_admin_applies_a_policy_the_server_signs(served: tuple[TestClient, ReviewQueue]) -> None:
    client, queue = served
    body = {"policy": POLICY.model_dump(mode="json"), "source": "policy.yaml"}
    applied = client.post("/api/admin/policy/versions", json=body, headers=ADMIN).json()
    assert (applied["version"]["version"], applied["unchanged"], applied["changes"]["added"]) == (1, False, ["reads"])
    assert applied["version"]["created_by"] == "root"
    assert queue.authority is not None
    claims = queue.authority.trusted_keys().verify(applied["version"]["token"])
    assert getattr(claims, "version", None) == 1
    again = client.post("/api/admin/policy/versions", json=body, headers=ADMIN).json()
    assert again["unchanged"] is True and len(queue.store.list_policy_versions()) == 1
    listed = client.get("/api/policy/versions", headers=auth("bob")).json()
    assert [v["version"] for v in listed["items"]] == [1] and listed["next_cursor"] is None
    assert client.get("/api/policy/versions/1", headers=auth("bob")).json() == listed["items"][0]


@pytest.mark.parametrize("name", ["alice", "bob"])
def test_upkeep_is_for_admins_only(served: tuple[TestClient, ReviewQueue], name: str) -> None:
    client, queue = served
    submit(queue, timeout_seconds=0.001)
    before = _stored(queue)
    for path, body in (
        ("/api/admin/policy/versions", {"policy": POLICY.model_dump(mode="json")}),
        ("/api/admin/requests/expire", None),
        ("/api/admin/runs/prune", {"older_than_seconds": 60}),
    ):
        message = _refused(client.post(path, json=body, headers=auth(name)), 403)["message"]
        assert f"{name} is not an admin" in message
    assert _stored(queue) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/admin/policy/versions", {"policy": {"rules": [{"name": "x", "verdict": "sometimes"}]}}),
        ("/api/admin/policy/versions", {"policy": {}, "extra": 1}),
        ("/api/admin/policy/versions", {"source": "x"}),
        ("/api/admin/runs/prune", {"older_than_seconds": 0}),
        ("/api/admin/runs/prune", {"older_than_seconds": 10**12}),
        ("/api/admin/runs/prune", {"older_than_seconds": 60, "dry_run": "maybe"}),
        ("/api/admin/runs/prune", {}),
    ],
)
def test_a_bad_admin_body_is_422_and_stores_nothing(
    served: tuple[TestClient, ReviewQueue], path: str, body: dict[str, Any]
) -> None:
    client, queue = served
    before = _stored(queue)
    _refused(client.post(path, json=body, headers=ADMIN), 422)
    assert _stored(queue) == before


def test_a_server_without_the_key_cannot_apply(tmp_path: Path) -> None:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")))
    reviewers = (reviewer("root", "root-admin-token-01", admin=True),)
    with TestClient(create_app(queue, make_settings(reviewers=reviewers))) as client:
        body = {"policy": POLICY.model_dump(mode="json")}
        refused = _refused(client.post("/api/admin/policy/versions", json=body, headers=ADMIN), 422)
        assert "holds no authority key" in refused["message"]
    assert queue.store.list_policy_versions() == []
    queue.close()


def test_the_log_is_handed_out_as_stored(served: tuple[TestClient, ReviewQueue]) -> None:
    client, queue = served
    request = submit(queue)
    client.post(f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("alice"))
    head = client.get("/api/audit/head", headers=auth("bob")).json()
    assert (head["seq"], head["hash"], head["missing"]) == (*queue.store.audit_head(), None)
    checkpoints = client.get("/api/audit/checkpoints", headers=auth("bob")).json()["items"]
    assert [c["token"] for c in checkpoints] == [c.token for c in queue.store.list_checkpoints()]
    assert checkpoints and checkpoints[-1]["authored"] is True


def test_reading_takes_a_reviewers_token(served: tuple[TestClient, ReviewQueue]) -> None:
    client, _ = served
    for path in ("/api/policy/versions", "/api/policy/versions/1", "/api/audit/checkpoints", "/api/audit/head"):
        _refused(client.get(path), 401)
        _refused(client.get(path, headers={"Authorization": "Bearer nobody-holds-this"}), 401)
    for version in ("0", "7", str(2**70), "-1"):
        assert client.get(f"/api/policy/versions/{version}", headers=auth("alice")).status_code in (404, 422)
    _refused(client.get("/api/policy/versions/x", headers=auth("alice")), 422)
    assert TOKENS  # the reviewers of tests.server.conftest, alice among them


SKELETONS = [
    ("/api/admin/policy/versions", '{"policy": __}'),
    ("/api/admin/policy/versions", '{"policy": {"rules": __}}'),
    ("/api/admin/policy/versions", '{"policy": {"default": __}}'),
    ("/api/admin/policy/versions", '{"policy": {}, "source": __}'),
    ("/api/admin/runs/prune", '{"older_than_seconds": __}'),
    ("/api/admin/runs/prune", '{"older_than_seconds": 60, "include_failed": __}'),
    ("/api/admin/runs/prune", "__"),
]
VALUES = st.one_of(
    st.sampled_from(HOSTILE_JSON),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(max_size=12).map(json.dumps),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(skeleton=st.sampled_from(SKELETONS), value=VALUES)
def test_hostile_admin_bodies_are_refused_cleanly(
    served: tuple[TestClient, ReviewQueue], skeleton: tuple[str, str], value: str
) -> None:
    client, queue = served
    path, text = skeleton
    before = _stored(queue)
    content = text.replace("__", value, 1).encode("utf-8", "surrogatepass")
    response = client.post(path, content=content, headers={**ADMIN, "content-type": "application/json"})
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        _refused(response, response.status_code)
        assert _stored(queue) == before

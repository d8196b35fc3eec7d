"""The admin API (``/api/admin``) and stored credentials at the door: admins only, tokens shown once, a
revocation or rotation refused at once by every app on the same database, and bad input a 4xx with
nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from crossgate import ReviewQueue, open_store
from crossgate.authority import Authority
from crossgate.credentials import Credentials, Scope
from crossgate.errors import ConfigurationError
from crossgate.server.app import create_app
from crossgate.server.settings import agent_token
from tests.server.conftest import POLICY, TOKENS, auth, make_settings

AUTHORITY = Authority.generate()
AGENT = "/api/agent/v1"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class World:
    """Two apps (two servers) on one SQLite file, and the first admin credential."""

    def __init__(self, path: Path) -> None:
        self.queues = [ReviewQueue(open_store(str(path)), POLICY, authority=AUTHORITY) for _ in range(2)]
        manager = Credentials(self.queues[0].store, authority=AUTHORITY)
        self.admin = manager.add("reviewer", "root", scope=Scope(admin=True), actor="ops").token
        self.clients = [TestClient(create_app(q, make_settings())) for q in self.queues]

    def state(self, include_revoked: bool = True) -> list[Any]:
        listed = self.clients[0].get("/api/admin/reviewers?include_revoked=true", headers=bearer(self.admin))
        agents = self.clients[0].get("/api/admin/agents?include_revoked=true", headers=bearer(self.admin))
        return [listed.json(), agents.json(), len(self.queues[0].store.list_events())]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for queue in self.queues:
            queue.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = World(tmp_path / "q.db")
    yield made
    made.close()


def test_an_admin_adds_a_reviewer_whose_token_works_within_its_scope(world: World) -> None:
    one, two = world.clients
    added = one.post("/api/admin/reviewers", json={"name": "ann", "tools": ["delete_*"]}, headers=bearer(world.admin))
    assert added.status_code == 201
    body = added.json()
    assert body["credential"]["scope"] == {"frameworks": [], "tools": ["delete_*"], "agents": [], "admin": False}
    assert body["credential"]["created_by"] == "root" and "token_sha256" not in body["credential"]
    me = two.get("/api/me", headers=bearer(body["token"]))  # the other server knows her at once
    assert me.status_code == 200 and me.json()["name"] == "ann"
    listed = two.get("/api/admin/reviewers", headers=bearer(world.admin)).json()["items"]
    assert [item["name"] for item in listed] == ["root", "ann"]
    assert body["token"] not in repr(listed)
    [event] = [e for e in world.queues[0].store.list_events() if e.payload.get("name") == "ann"]
    assert (event.kind, event.actor, event.channel) == ("credential_added", "root", "api")
    assert body["token"] not in repr(event.payload)


def test_a_revoked_or_rotated_token_is_refused_at_once_by_the_other_server(world: World) -> None:
    one, two = world.clients
    ann = one.post("/api/admin/reviewers", json={"name": "ann"}, headers=bearer(world.admin)).json()["token"]
    bot = one.post("/api/admin/agents", json={"name": "bot"}, headers=bearer(world.admin)).json()["token"]
    assert two.get("/api/me", headers=bearer(ann)).status_code == 200
    assert two.get(f"{AGENT}/requests", headers=bearer(bot)).status_code == 200

    rotated = one.post("/api/admin/reviewers/ann/rotate", headers=bearer(world.admin))
    assert rotated.status_code == 200
    assert two.get("/api/me", headers=bearer(ann)).status_code == 401, "the old token is refused at once"
    assert two.get("/api/me", headers=bearer(rotated.json()["token"])).status_code == 200

    assert one.post("/api/admin/agents/bot/revoke", headers=bearer(world.admin)).status_code == 200
    assert two.get(f"{AGENT}/requests", headers=bearer(bot)).status_code == 401
    assert one.post("/api/admin/reviewers/ann/revoke", headers=bearer(world.admin)).status_code == 200
    assert two.get("/api/me", headers=bearer(rotated.json()["token"])).status_code == 401


def test_a_stored_agent_submits_and_cannot_decide(world: World) -> None:
    one, two = world.clients
    bot = one.post("/api/admin/agents", json={"name": "bot"}, headers=bearer(world.admin)).json()["token"]
    call = {"framework": "openai-agents", "tool": "delete_ticket", "args": {"id": "t1"}, "run": "r1", "call_id": "c1"}
    submitted = two.post(f"{AGENT}/requests", json={"call": call}, headers={**bearer(bot), "Idempotency-Key": "k1"})
    assert submitted.status_code == 201
    rid = submitted.json()["request"]["id"]
    decided = two.post(f"/api/requests/{rid}/decision", json={"kind": "approve"}, headers=bearer(bot))
    assert decided.status_code == 403
    assert world.queues[0].get(rid).status.value == "pending"
    [event] = world.queues[0].events(request_id=rid)
    assert event.actor == "bot"


@pytest.mark.parametrize(
    ("who", "status"),
    [("reviewer", 403), ("file-reviewer", 403), ("agent", 403), ("nobody", 401), ("none", 401)],
)
def test_only_an_admin_manages_credentials_and_a_refusal_changes_nothing(world: World, who: str, status: int) -> None:
    one = world.clients[0]
    reviewer = one.post("/api/admin/reviewers", json={"name": "ann"}, headers=bearer(world.admin)).json()["token"]
    agent = one.post("/api/admin/agents", json={"name": "bot"}, headers=bearer(world.admin)).json()["token"]
    headers = {
        "reviewer": bearer(reviewer),
        "file-reviewer": auth("alice"),
        "agent": bearer(agent),
        "nobody": bearer("cgr_not-a-token-anyone-holds"),
        "none": {},
    }[who]
    before = world.state()
    attempts = [
        one.post("/api/admin/reviewers", json={"name": "eve", "admin": True}, headers=headers),
        one.post("/api/admin/reviewers/ann/rotate", headers=headers),
        one.post("/api/admin/reviewers/root/revoke", headers=headers),
        one.post("/api/admin/agents/bot/revoke", headers=headers),
        one.get("/api/admin/reviewers", headers=headers),
    ]
    for attempt in attempts:
        assert attempt.status_code == status, attempt.text
        assert set(attempt.json()) == {"error", "message", "status"}
    assert world.state() == before


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/admin/reviewers", {"name": "root"}, 409, "exists already"),
        ("/api/admin/reviewers", {"name": "alice"}, 409, "tokens file"),
        ("/api/admin/reviewers", {"name": "bad name"}, 422, "bad reviewer name"),
        ("/api/admin/reviewers", {"name": ""}, 422, "name"),
        ("/api/admin/reviewers", {"name": "ann", "tools": "delete_*"}, 422, "tools"),
        ("/api/admin/reviewers", {"name": "ann", "superuser": True}, 422, "superuser"),
        ("/api/admin/agents", {"name": "bot", "tools": ["x"]}, 422, "takes no scope"),
        ("/api/admin/widgets", {"name": "w"}, 404, "reviewers or agents"),
        ("/api/admin/reviewers/nobody/rotate", None, 404, "no live reviewer"),
        ("/api/admin/agents/nobody/revoke", None, 404, "no live agent"),
    ],
)
def test_bad_input_is_a_4xx_with_the_error_body_and_changes_nothing(
    world: World, path: str, body: Any, status: int, words: str
) -> None:
    before = world.state()
    answer = world.clients[0].post(path, json=body, headers=bearer(world.admin))
    assert answer.status_code == status, answer.text
    assert set(answer.json()) == {"error", "message", "status"} and words in answer.json()["message"]
    assert world.state() == before


def test_a_name_in_the_tokens_file_and_in_the_store_is_refused_at_start(tmp_path: Path) -> None:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY, authority=AUTHORITY)
    manager = Credentials(queue.store, authority=AUTHORITY)
    manager.add("reviewer", "alice", actor="ops")
    manager.add("agent", "billing-bot", actor="ops")
    with pytest.raises(ConfigurationError) as refused:
        create_app(queue, make_settings(agents=(agent_token("billing-bot", "billing-bot-token-0001"),)))
    message = str(refused.value)
    assert "\n" not in message and "reviewer alice" in message and "agent billing-bot" in message
    queue.close()


def test_a_stored_reviewer_signs_in_on_the_page_and_a_revocation_ends_the_session(world: World) -> None:
    one, two = world.clients
    ann = one.post("/api/admin/reviewers", json={"name": "ann"}, headers=bearer(world.admin)).json()["token"]
    signed_in = two.post("/login", data={"token": ann}, follow_redirects=False)
    assert signed_in.status_code == 303
    assert two.get("/api/me").json()["name"] == "ann"  # the client keeps the session cookie
    one.post("/api/admin/reviewers/ann/revoke", headers=bearer(world.admin))
    assert two.get("/api/me").status_code == 401


def test_file_reviewers_still_work_beside_stored_ones(world: World) -> None:
    assert world.clients[1].get("/api/me", headers=auth("alice")).json()["name"] == "alice"
    assert TOKENS["alice"] not in repr(world.state())


def test_a_server_without_the_authority_key_adds_nothing(tmp_path: Path) -> None:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    admin = Credentials(queue.store, authority=AUTHORITY).add("reviewer", "root", scope=Scope(admin=True), actor="ops")
    with TestClient(create_app(queue, make_settings(), credential_keys=AUTHORITY.trusted_keys())) as client:
        answer = client.post("/api/admin/reviewers", json={"name": "ann"}, headers=bearer(admin.token))
        assert answer.status_code == 422 and "authority's private key" in answer.json()["message"]
    assert [c.name for c in queue.store.list_credentials()] == ["root"]  # type: ignore[attr-defined]
    queue.close()

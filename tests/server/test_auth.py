"""Reviewers and access: no token 401, out of scope 403, self-approval 403, channels recorded."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from crossgate import ReviewQueue
from crossgate.errors import ConfigurationError
from crossgate.model import RequestStatus
from crossgate.server import ServerSettings
from crossgate.server.settings import load_config, reviewers_from_env
from tests.server.conftest import TOKENS, auth, submit

PROTECTED = [
    ("GET", "/api/me"),
    ("GET", "/api/requests"),
    ("GET", "/api/requests/x"),
    ("POST", "/api/requests/x/decision"),
    ("POST", "/api/decisions"),
    ("POST", "/api/requests/x/links"),
    ("GET", "/api/requests/x/events"),
    ("GET", "/api/rules"),
    ("POST", "/api/rules"),
    ("DELETE", "/api/rules/x"),
    ("GET", "/api/events"),
    ("GET", "/api/audit/verify"),
    ("GET", "/api/stream"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": f"Basic {TOKENS['alice']}"},
        {"Authorization": "Bearer "},
    ],
    ids=["none", "unknown", "basic", "empty"],
)
async def test_every_endpoint_needs_a_valid_token(
    client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str]
) -> None:
    body = {"kind": "approve"} if method == "POST" else None
    response = await client.request(method, path, headers=headers, json=body)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_out_of_scope_is_403_and_changes_nothing(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    openai = submit(queue, framework="openai-agents")
    response = await client.post(f"/api/requests/{openai.id}/decision", json={"kind": "approve"}, headers=auth("bob"))
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert "bob may decide frameworks langgraph" in response.json()["message"]
    assert queue.get(openai.id).status is RequestStatus.PENDING
    langgraph = submit(queue, framework="langgraph")
    ok = await client.post(f"/api/requests/{langgraph.id}/decision", json={"kind": "approve"}, headers=auth("bob"))
    assert ok.status_code == 200


async def test_scope_by_tool_and_agent(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    other_agent = submit(queue, agent="billing")
    other_tool = submit(queue, tool="delete_user", args={"id": "u1"})
    mine = submit(queue, agent="support")
    for request in (other_agent, other_tool):
        response = await client.post(
            f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("lena")
        )
        assert response.status_code == 403, request.call
    ok = await client.post(f"/api/requests/{mine.id}/decision", json={"kind": "approve"}, headers=auth("lena"))
    assert ok.status_code == 200


async def test_self_approval_is_refused(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, requested_by="alice")
    response = await client.post(
        f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("alice")
    )
    assert response.status_code == 403
    assert response.json()["error"] == "self_decision"
    assert "alice submitted request" in response.json()["message"]
    assert queue.get(request.id).status is RequestStatus.PENDING
    view = (await client.get(f"/api/requests/{request.id}", headers=auth("alice"))).json()
    assert view["can_decide"] is False
    ok = await client.post(f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("lena"))
    assert ok.status_code == 200


async def test_restricted_reviewer_cannot_remember_beyond_scope(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, framework="langgraph")
    body = {"kind": "approve", "remember": {"scope": "forever"}}
    response = await client.post(f"/api/requests/{request.id}/decision", json=body, headers=auth("bob"))
    assert response.status_code == 403
    assert "beyond bob's scope" in response.json()["message"]
    assert queue.rules() == []
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_restricted_reviewer_manages_only_rules_within_scope(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    wide = await client.post("/api/rules", json={"effect": "allow", "tool": "archive_ticket"}, headers=auth("bob"))
    assert wide.status_code == 403
    glob = await client.post(
        "/api/rules", json={"effect": "allow", "tool": "archive_ticket", "framework": "lang*"}, headers=auth("bob")
    )
    assert glob.status_code == 403
    narrow = await client.post(
        "/api/rules", json={"effect": "allow", "tool": "archive_ticket", "framework": "langgraph"}, headers=auth("bob")
    )
    assert narrow.status_code == 201
    other = queue.add_rule(queue.new_rule(effect="deny", tool="delete_*"))
    assert (await client.delete(f"/api/rules/{other.id}", headers=auth("bob"))).status_code == 403
    assert queue.store.get_rule(other.id).revoked_at is None


async def test_cookie_session_decides_through_channel_web(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    page = await client.get("/")
    assert page.status_code == 303
    assert page.headers["location"] == "/login"
    refused = await client.get("/login", params={"token": "wrong-token-123"})
    assert refused.status_code == 401
    signed_in = await client.get("/login", params={"token": TOKENS["alice"]})
    assert signed_in.status_code == 303
    assert "httponly" in signed_in.headers["set-cookie"].lower()
    assert "samesite=strict" in signed_in.headers["set-cookie"].lower()
    assert (await client.get("/api/me")).json()["channel"] == "web"
    request = submit(queue)
    assert (await client.post(f"/api/requests/{request.id}/decision", json={"kind": "approve"})).status_code == 200
    decision = queue.get(request.id).decision
    assert decision is not None
    assert (decision.reviewer, decision.channel) == ("alice", "web")
    await client.post("/logout")
    client.cookies.clear()
    assert (await client.get("/api/me")).status_code == 401


async def test_login_form_post(client: httpx.AsyncClient) -> None:
    bad = await client.post(
        "/login", content=b"token=nope", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert bad.status_code == 401
    assert "belongs to no reviewer" in bad.text
    good = await client.post(
        "/login",
        content=f"token={TOKENS['bob']}".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert good.status_code == 303


def test_tokens_from_toml_yaml_and_env(tmp_path: Path) -> None:
    toml = tmp_path / "reviewers.toml"
    toml.write_text(
        'secret_env = "SECRET"\n[[reviewers]]\nname = "alice"\ntoken_env = "ALICE"\n'
        '[[reviewers]]\nname = "bob"\ntoken = "bob-token-1234"\nframeworks = ["langgraph"]\n'
        '[[webhooks]]\nurl = "http://127.0.0.1:9/h"\nformat = "slack"\n'
    )
    config = load_config(toml, env={"ALICE": "alice-token-123", "SECRET": "x" * 32})
    assert [r.name for r in config["reviewers"]] == ["alice", "bob"]
    assert config["reviewers"][1].frameworks == ("langgraph",)
    assert config["webhooks"][0].format == "slack"
    assert config["webhooks"][0].events == ("submitted", "decided", "expired", "cancelled")
    escalation = tmp_path / "escalation.yaml"
    escalation.write_text("webhooks:\n  - url: http://127.0.0.1:9/oncall\n    escalate_after: 900\n")
    [oncall] = load_config(escalation, env={})["webhooks"]
    assert (oncall.escalate_after, oncall.events) == (900.0, ("submitted",))
    assert config["secret"] == b"x" * 32
    tuned = tmp_path / "tuned.toml"
    tuned.write_text("webhook_attempts = 3\nwebhook_lease_seconds = 12\nwebhook_backoff_seconds = 0.25\n")
    settings = ServerSettings(**load_config(tuned, env={}))
    assert (settings.webhook_attempts, settings.webhook_lease_seconds, settings.webhook_backoff_seconds) == (
        3,
        12.0,
        0.25,
    )
    assert settings.webhook_timeout_seconds == ServerSettings().webhook_timeout_seconds
    yaml_file = tmp_path / "reviewers.yaml"
    yaml_file.write_text("reviewers:\n  - name: carol\n    token: carol-token-1\n    tools: [read_*]\n")
    assert load_config(yaml_file, env={})["reviewers"][0].tools == ("read_*",)
    env_reviewers = reviewers_from_env({"CROSSGATE_TOKENS": "dan:dan-token-12, eve:eve-token-123"})
    assert [r.name for r in env_reviewers] == ["dan", "eve"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("reviewers:\n  - name: a\n", "needs token"),
        ("reviewers:\n  - name: a\n    token: short\n", "too short"),
        ("reviewers:\n  - name: a\n    token_env: NOPE\n", "not set"),
        ("reviewers:\n  - name: a\n    token: aaaaaaaaaa\n    colour: red\n", "unknown keys"),
        ("webhooks:\n  - url: http://x\n    format: xml\n", "json, slack or teams"),
        ("webhooks:\n  - url: http://x/t0k3n\n    events: [submitted, expire]\n", r"r.yaml: webhook 'x': .*'expire'"),
        ("webhooks:\n  - url: http://x\n    events: []\n", "got none"),
        ("webhooks:\n  - url: http://x\n    events: decided\n", "events must be a list"),
        ("webhooks:\n  - url: http://x\n    escalate_after: soon\n", "escalate_after must be a number"),
        ("webhooks:\n  - url: http://x\n    escalate_after: -5\n", "escalate_after must be a positive number"),
        ("surprise: 1\n", "unknown keys"),
        ("- just a list\n", "must hold a mapping"),
        ("webhook_lease_seconds: 0\n", "webhook_lease_seconds must be positive"),
        ("webhook_attempts: 2.5\n", "webhook_attempts must be a whole number"),
        ("webhook_backoff_seconds: soon\n", "webhook_backoff_seconds must be a number"),
        ("webhook_timeout_seconds: true\n", "webhook_timeout_seconds must be a number"),
    ],
)
def test_bad_token_files_are_refused(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=problem):
        load_config(path, env={})


def test_env_tokens_need_name_and_token() -> None:
    with pytest.raises(ConfigurationError, match="name:token"):
        reviewers_from_env({"CROSSGATE_TOKENS": "just-a-token"})


def test_settings_refuse_contradictions() -> None:
    from crossgate.server import ServerSettings, WebhookTarget
    from crossgate.server.settings import reviewer

    alice = reviewer("alice", "alice-token-1")
    with pytest.raises(ConfigurationError, match="unique"):
        ServerSettings(reviewers=(alice, reviewer("alice", "other-token-1")))
    with pytest.raises(ConfigurationError, match="share a token"):
        ServerSettings(reviewers=(alice, reviewer("bob", "alice-token-1")))
    with pytest.raises(ConfigurationError, match="once"):
        ServerSettings(webhooks=(WebhookTarget(url="http://127.0.0.1:9/h"), WebhookTarget(url="http://127.0.0.1:9/h")))
    with pytest.raises(ConfigurationError, match="not a configured reviewer"):
        ServerSettings(reviewers=(alice,), link_reviewer="bob")
    with pytest.raises(ConfigurationError, match="16 bytes"):
        ServerSettings(secret=b"short")

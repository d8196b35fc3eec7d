"""Signed decision links: genuine ones decide once (channel "link"); tampered, expired or reused ones are refused."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import httpx

from crossgate import ApprovalRequest, ReviewQueue
from crossgate.model import DecisionKind, RequestStatus
from crossgate.server import ServerSettings
from crossgate.server.links import LinkClaims, LinkSigner
from tests.server.conftest import auth, submit


async def _links(client: httpx.AsyncClient, request: ApprovalRequest, who: str = "alice") -> dict[str, str]:
    response = await client.post(f"/api/requests/{request.id}/links", headers=auth(who))
    assert response.status_code == 200, response.text
    body = response.json()
    base = ServerSettings().base_url  # the configured address, whatever the client's Host
    assert all(body[k].startswith(f"{base}/links/") for k in ("approve", "reject")), body
    return {k: body[k].removeprefix(base) for k in ("approve", "reject")}


async def test_approve_link_decides_once_then_refuses_reuse(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    links = await _links(client, request)
    preview = await client.get(links["approve"])
    assert preview.status_code == 200
    assert "delete_ticket" in preview.text
    assert queue.get(request.id).status is RequestStatus.PENDING, "opening a link must not decide"
    used = await client.post(links["approve"])
    assert used.status_code == 200
    decision = queue.get(request.id).decision
    assert decision is not None
    assert (decision.kind, decision.reviewer, decision.channel) == ("approve", "alice", "link")
    replay = await client.post(links["approve"])
    assert replay.status_code == 409
    assert f"request {request.id} was already decided (approve by alice via link at" in replay.text
    other = await client.post(
        links["reject"], content=b"message=no", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert other.status_code == 409
    assert [e.kind for e in queue.events(request_id=request.id)].count("decided") == 1


async def test_link_after_a_decision_elsewhere_names_it(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    links = await _links(client, request)
    await client.post(
        f"/api/requests/{request.id}/decision", json={"kind": "reject", "message": "no"}, headers=auth("lena")
    )
    response = await client.get(links["approve"])
    assert response.status_code == 409
    assert "(reject by lena via api at" in response.text


async def test_reject_link_needs_a_message(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    links = await _links(client, request)
    form = {"content-type": "application/x-www-form-urlencoded"}
    empty = await client.post(links["reject"], content=b"message=", headers=form)
    assert empty.status_code == 422
    assert queue.get(request.id).status is RequestStatus.PENDING
    done = await client.post(links["reject"], content=b"message=Close+it+instead", headers=form)
    assert done.status_code == 200
    decision = queue.get(request.id).decision
    assert decision is not None
    assert (decision.kind, getattr(decision, "message", None), decision.channel) == (
        "reject",
        "Close it instead",
        "link",
    )


def _swap_claims(token: str, **changes: object) -> str:
    body, _, signature = token.partition(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims.update(changes)
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{forged}.{signature}"


async def test_tampered_links_are_refused(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    links = await _links(client, request)
    token = links["reject"].removeprefix("/links/")
    signature_flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    for forged in (
        _swap_claims(token, d="approve"),
        _swap_claims(token, v="lena"),
        _swap_claims(token, e=2_000_000_000),
        signature_flipped,
        "no-dot-here",
        "%%%.%%%",
    ):
        for method in ("GET", "POST"):
            response = await client.request(method, f"/links/{forged}")
            assert response.status_code == 403, (forged, method, response.text)
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_link_signed_with_another_secret_is_refused(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    claims = LinkClaims(
        request_id=request.id,
        fingerprint=request.fingerprint,
        decision=DecisionKind.APPROVE,
        expires_at=int((datetime.now(UTC) + timedelta(hours=1)).timestamp()),
        reviewer="alice",
    )
    token = LinkSigner(b"another-secret-of-32-bytes-xxxxx").sign(claims)
    response = await client.post(f"/links/{token}")
    assert response.status_code == 403
    assert "altered" in response.text
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_expired_link_is_410_and_decides_nothing(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    signer = client._transport.app.state.crossgate.signer  # type: ignore[attr-defined]
    claims = LinkClaims(
        request_id=request.id,
        fingerprint=request.fingerprint,
        decision=DecisionKind.APPROVE,
        expires_at=int((datetime.now(UTC) - timedelta(seconds=1)).timestamp()),
        reviewer="alice",
    )
    token = signer.sign(claims)
    for method in ("GET", "POST"):
        response = await client.request(method, f"/links/{token}")
        assert response.status_code == 410
        assert "expired at" in response.text
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_links_respect_scope_and_reviewer(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, framework="openai-agents")
    refused = await client.post(f"/api/requests/{request.id}/links", headers=auth("bob"))
    assert refused.status_code == 403
    signer = client._transport.app.state.crossgate.signer  # type: ignore[attr-defined]
    expires = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
    for name, status in (("bob", 403), ("mallory", 401)):
        token = signer.sign(
            LinkClaims(
                request_id=request.id,
                fingerprint=request.fingerprint,
                decision=DecisionKind.APPROVE,
                expires_at=expires,
                reviewer=name,
            )
        )
        assert (await client.post(f"/links/{token}")).status_code == status
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_links_for_a_closed_request_are_409(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    queue.cancel(request.id)
    response = await client.post(f"/api/requests/{request.id}/links", headers=auth("alice"))
    assert response.status_code == 409
    assert response.json()["error"] == "request_cancelled"

"""Agent credentials: what an agent token may not do, and what deleting an instance ends."""

from __future__ import annotations

import httpx

from crossgate import ReviewQueue
from tests.server.aap.conftest import AAP, PROVISIONER, SERVICE, bearer, call, create, provision, reviewer


async def test_an_agent_token_may_not_decide_or_read_the_queue(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    for agent in (token, SERVICE):
        r = await http.post(f"/api/requests/{rid}/decision", json={"kind": "approve"}, headers=bearer(agent))
        assert r.status_code == 403, r.text
        assert (await http.get("/api/requests", headers=bearer(agent))).status_code == 403
        rule = {"effect": "allow", "tool": "delete_ticket"}
        assert (await http.post("/api/rules", json=rule, headers=bearer(agent))).status_code == 403
    r = await http.get(f"{AAP}/requests/{rid}", headers=bearer(token))
    assert r.json()["status"] == "pending"


async def test_another_instances_request_is_not_found(http: httpx.AsyncClient) -> None:
    _, mine = await provision(http)
    _, theirs = await provision(http, "other", key="k-2")
    rid = (await create(http, mine, call())).json()["id"]
    for method in ("GET", "DELETE"):
        r = await http.request(method, f"{AAP}/requests/{rid}", headers=bearer(theirs))
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert (await http.get(f"{AAP}/requests/{rid}", headers=bearer(mine))).json()["status"] == "pending"


async def test_wrong_and_missing_credentials(http: httpx.AsyncClient) -> None:
    _, token = await provision(http)
    assert (await create(http, "nobody-has-this-token", call())).status_code == 401
    assert (await http.post(f"{AAP}/requests", json=call())).status_code == 401
    assert (await create(http, PROVISIONER, call())).status_code == 403  # a provisioner makes no requests
    assert (await create(http, reviewer()["Authorization"][7:], call())).status_code == 403
    r = await http.post(f"{AAP}/instances", json={}, headers={**bearer(token), "Idempotency-Key": "x"})
    assert r.status_code == 403  # an instance provisions nothing


async def test_deleting_an_instance_cancels_its_pending_requests_and_refuses_its_token(
    http: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    iid, token = await provision(http)
    rid = (await create(http, token, call())).json()["id"]
    decided = (await create(http, token, call(id="t2"), key="c-2")).json()["id"]
    await http.post(f"/api/requests/{decided}/decision", json={"kind": "approve"}, headers=reviewer())
    r = await http.delete(f"{AAP}/instances/{iid}", headers=bearer(PROVISIONER))
    assert r.status_code == 204 and r.headers["x-request-id"]
    assert queue.get(rid).status.value == "cancelled"
    assert queue.get(decided).status.value == "decided"  # terminal decisions stay as they were
    assert (await http.get(f"{AAP}/requests/{rid}", headers=bearer(token))).status_code == 401
    assert (await create(http, token, call(id="t3"), key="c-3")).status_code == 401
    assert (await http.delete(f"{AAP}/instances/{iid}", headers=bearer(PROVISIONER))).status_code == 204
    assert (await http.get(f"{AAP}/instances/{iid}", headers=bearer(PROVISIONER))).status_code == 404
    replay = await http.post(
        f"{AAP}/instances", json={"instance_name": "laptop"}, headers={**bearer(PROVISIONER), "Idempotency-Key": "k-1"}
    )
    assert replay.status_code == 409 and replay.json()["error"]["code"] == "instance_deleted"


async def test_provision_replay_conflict_update_and_unsupported_delivery(http: httpx.AsyncClient) -> None:
    iid, token = await provision(http)
    headers = {**bearer(PROVISIONER), "Idempotency-Key": "k-1"}
    replay = await http.post(f"{AAP}/instances", json={"instance_name": "laptop"}, headers=headers)
    assert replay.status_code == 200 and replay.json()["credential"]["token"] == token
    other = await http.post(f"{AAP}/instances", json={"instance_name": "desk"}, headers=headers)
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"
    headers = {**bearer(PROVISIONER), "Idempotency-Key": "u-1"}
    r = await http.patch(f"{AAP}/instances/{iid}", json={"instance_name": "desk"}, headers=headers)
    assert r.status_code == 200 and r.json() == {"id": iid, "name": "desk"}
    hook = {"type": "email", "url": "https://example.com/h", "registration_id": iid, "signing_secret": "whsec_x"}
    r = await http.patch(
        f"{AAP}/instances/{iid}", json={"delivery": hook}, headers={**headers, "Idempotency-Key": "u-2"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_delivery_type"
    assert (await http.get(f"{AAP}/instances/{iid}", headers=bearer(PROVISIONER))).json()["name"] == "desk"

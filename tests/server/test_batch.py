"""``POST /api/decisions``: several decisions at once, each decided (or refused) on its own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from crossgate import Approve, ReviewQueue, fingerprint
from crossgate.errors import StoreError
from crossgate.model import RequestStatus
from crossgate.server.api import BATCH_REFUSED
from tests.server.conftest import TOKENS, auth, submit

URL = "/api/decisions"


def item(request_id: str, kind: str = "approve", **fields: Any) -> dict[str, Any]:
    return {"request_id": request_id, "decision": {"kind": kind, **fields}}


def decided_events(queue: ReviewQueue, request_id: str) -> list[str]:
    return [e.actor or "" for e in queue.events(request_id=request_id) if e.kind == "decided"]


async def test_a_mixed_batch_decides_each_item_on_its_own(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    """bob may decide langgraph only: one ok, unknown 404, decided 409, out of scope 403, not allowed 422."""
    ok = submit(queue, framework="langgraph", args={"id": "t1"})
    done = submit(queue, framework="langgraph", args={"id": "t2"})
    queue.decide(done.id, Approve(), reviewer="alice")
    outside = submit(queue, framework="openai-agents", args={"id": "t3"})
    no_edit = submit(queue, framework="langgraph", args={"id": "t4"}, capabilities=("approve", "reject"))
    mine = submit(queue, framework="langgraph", args={"id": "t5"}, requested_by="bob")
    also_ok = submit(queue, framework="langgraph", args={"id": "t6"})
    items = [
        item(ok.id, note="batch"),
        item("req_nope"),
        item(done.id, "reject", message="too late"),
        item(outside.id),
        item(no_edit.id, "edit", args={"id": "t9"}),
        item(mine.id),
        item(also_ok.id, "reject", message="Keep t6; the customer still needs it."),
    ]
    response = await client.post(URL, json={"items": items}, headers=auth("bob"))
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["request_id"] for r in results] == [i["request_id"] for i in items]
    assert [r["ok"] for r in results] == [True, False, False, False, False, False, True]
    errors = [(r["error"]["status"], r["error"]["type"], r["error"]["error"]) for r in results if not r["ok"]]
    assert errors == [
        (404, "NotFoundError", "not_found"),
        (409, "AlreadyDecidedError", "already_decided"),
        (403, "ForbiddenError", "forbidden"),
        (422, "DecisionNotAllowedError", "decision_not_allowed"),
        (403, "SelfDecisionError", "self_decision"),
    ]
    assert "no request with id 'req_nope'" in results[1]["error"]["message"]
    assert "bob may decide frameworks langgraph" in results[3]["error"]["message"]
    assert "does not allow edit; allowed: approve, reject" in results[4]["error"]["message"]
    # an ok item carries the request exactly as the single endpoint returns it
    single = (await client.get(f"/api/requests/{ok.id}", headers=auth("bob"))).json()
    assert results[0]["request"] == single
    assert results[0]["request"]["status"] == "decided"
    assert results[6]["request"]["decision"]["message"] == "Keep t6; the customer still needs it."

    assert queue.get(ok.id).status is RequestStatus.DECIDED
    assert queue.get(also_ok.id).status is RequestStatus.DECIDED
    for untouched in (outside, no_edit, mine):
        assert queue.get(untouched.id).status is RequestStatus.PENDING
        assert [e.kind for e in queue.events(request_id=untouched.id)] == ["submitted"]
    first = queue.get(done.id).decision
    assert first is not None and (first.kind, first.reviewer) == ("approve", "alice")
    # one decided event per ok item, recorded as bob through the API
    assert decided_events(queue, ok.id) == ["bob"]
    assert decided_events(queue, also_ok.id) == ["bob"]
    assert decided_events(queue, done.id) == ["alice"]
    batch_events = [e for e in queue.events() if e.kind == "decided" and e.actor == "bob"]
    assert sorted(e.request_id for e in batch_events) == sorted([ok.id, also_ok.id])
    assert {e.channel for e in batch_events} == {"api"}
    assert queue.verify_audit().ok


@pytest.mark.parametrize(
    ("case", "reviewer"),
    [
        ("remember_beyond_scope", "bob"),
        ("wrong_fingerprint", "alice"),
        ("policy_denies_the_edit", "alice"),
        ("args_fail_the_schema", "alice"),
        ("respond_with_remember", "alice"),
        ("self_decision", "alice"),
        ("out_of_scope", "lena"),
    ],
)
async def test_each_item_gets_the_single_endpoints_answer(
    client: httpx.AsyncClient, queue: ReviewQueue, case: str, reviewer: str
) -> None:
    """The batch refuses what the single endpoint refuses, with its status, code and message."""
    denied = {"id": "t9"}
    queue.add_rule(
        queue.new_rule(
            effect="deny", tool="delete_ticket", match="exact", args_fingerprint=fingerprint("delete_ticket", denied)
        )
    )
    request = submit(
        queue,
        framework="langgraph",
        agent="billing" if case == "out_of_scope" else "support",
        requested_by="alice" if case == "self_decision" else None,
    )
    decision = {
        "remember_beyond_scope": {"kind": "approve", "remember": {"scope": "forever"}},
        "wrong_fingerprint": {"kind": "approve", "fingerprint": "0" * 64},
        "policy_denies_the_edit": {"kind": "edit", "args": denied},
        "args_fail_the_schema": {"kind": "edit", "args": {"id": 5}},
        "respond_with_remember": {"kind": "respond", "content": "x", "remember": {"scope": "forever"}},
        "self_decision": {"kind": "approve"},
        "out_of_scope": {"kind": "approve"},
    }[case]
    head = queue.store.audit_head()
    batch = await client.post(
        URL, json={"items": [{"request_id": request.id, "decision": decision}]}, headers=auth(reviewer)
    )
    assert batch.status_code == 200
    (result,) = batch.json()["results"]
    assert result["ok"] is False
    assert queue.store.audit_head() == head and queue.get(request.id).is_open
    assert len(queue.rules()) == 1
    single = await client.post(f"/api/requests/{request.id}/decision", json=decision, headers=auth(reviewer))
    assert single.status_code in (403, 422)
    assert {k: v for k, v in result["error"].items() if k != "type"} == single.json()
    assert queue.get(request.id).is_open


async def test_an_approve_all_of_the_full_hundred(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    ids = [submit(queue, args={"id": f"t{i}"}).id for i in range(100)]
    response = await client.post(URL, json={"items": [item(i) for i in ids]}, headers=auth("alice"))
    assert response.status_code == 200
    assert all(r["ok"] for r in response.json()["results"])
    assert queue.pending() == []
    assert sum(e.kind == "decided" for e in queue.events()) == 100


async def test_a_repeated_id_is_decided_once(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    items = [item(request.id), item(request.id, "reject", message="no")]
    results = (await client.post(URL, json={"items": items}, headers=auth("alice"))).json()["results"]
    assert [r["ok"] for r in results] == [True, False]
    assert results[1]["error"]["status"] == 409
    assert decided_events(queue, request.id) == ["alice"]


MALFORMED: list[tuple[str, Any, str]] = [
    ("items not a list", {"items": {"request_id": "x"}}, "items"),
    ("no items key", {"decisions": []}, "items"),
    ("empty", {"items": []}, "items"),
    ("over 100", {"items": [item(f"req_{n}") for n in range(101)]}, "items"),
    ("no request_id", {"items": ["{ok}", {"decision": {"kind": "approve"}}]}, "items.1.request_id"),
    ("empty request_id", {"items": ["{ok}", item("")]}, "items.1.request_id"),
    ("unknown kind", {"items": ["{ok}", item("{other}", "maybe")]}, "items.1.decision"),
    ("no decision", {"items": ["{ok}", {"request_id": "{other}"}]}, "items.1.decision"),
    ("reject without message", {"items": ["{ok}", item("{other}", "reject")]}, "items.1.decision"),
    ("reject with an empty message", {"items": ["{ok}", item("{other}", "reject", message="")]}, "items.1"),
    (
        "reject with blanks",
        {"items": ["{ok}", item("{other}", "reject", message="   ")]},
        "body.items.1.decision.message",
    ),
    ("edit args not an object", {"items": ["{ok}", item("{other}", "edit", args=[1])]}, "items.1.decision"),
    ("an unknown field", {"items": ["{ok}", item("{other}", reviewer="mallory")]}, "items.1.decision"),
    ("not a JSON object", ["{ok}"], "body: "),
]


@pytest.mark.parametrize(("body", "where"), [(b, w) for _, b, w in MALFORMED], ids=[n for n, _, _ in MALFORMED])
async def test_a_malformed_batch_is_422_and_decides_nothing(
    client: httpx.AsyncClient, queue: ReviewQueue, body: Any, where: str
) -> None:
    ok = submit(queue, args={"id": "t1"})
    other = submit(queue, args={"id": "t2"})
    filled = _fill(body, {"{ok}": item(ok.id), "{other}": other.id})
    head = queue.store.audit_head()
    response = await client.post(URL, json=filled, headers=auth("alice"))
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["status"] == 422
    assert BATCH_REFUSED in problem["message"]
    assert where in problem["message"], problem["message"]
    assert queue.store.audit_head() == head
    assert {r.id for r in queue.pending()} == {ok.id, other.id}


async def test_a_body_that_is_not_json_decides_nothing(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    text = '{"items": [{"request_id": "' + request.id + '", "decision": {"kind": "approve"}}]'
    response = await client.post(
        URL, content=text.encode(), headers={**auth("alice"), "content-type": "application/json"}
    )
    assert response.status_code == 422
    assert BATCH_REFUSED in response.json()["message"]
    assert queue.get(request.id).is_open


async def test_without_a_token_nothing_is_decided(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue)
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        response = await client.post(URL, json={"items": [item(request.id)]}, headers=headers)
        assert response.status_code == 401
    assert queue.get(request.id).is_open


async def test_the_page_session_decides_through_channel_web(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    first, second = submit(queue, args={"id": "t1"}), submit(queue, args={"id": "t2"})
    assert (await client.get("/login", params={"token": TOKENS["alice"]})).status_code == 303
    body = {"items": [item(first.id), item(second.id, "reject", message="not this one")]}
    # a cross-site form can send the cookie only with a form or text body (SameSite=Strict aside): refused whole
    forged = await client.post(
        URL, content=httpx.Request("POST", "/", json=body).content, headers={"content-type": "text/plain"}
    )
    assert forged.status_code == 422
    assert queue.get(first.id).is_open and queue.get(second.id).is_open
    response = await client.post(URL, json=body)
    assert response.status_code == 200
    assert [r["ok"] for r in response.json()["results"]] == [True, True]
    for request_id in (first.id, second.id):
        decision = queue.get(request_id).decision
        assert decision is not None
        assert (decision.reviewer, decision.channel) == ("alice", "web")


def _fill(value: Any, slots: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return slots.get(value, value)
    if isinstance(value, list):
        return [_fill(v, slots) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, slots) for k, v in value.items()}
    return value


@pytest.mark.parametrize(
    ("failure", "status", "kind", "message"),
    [
        (StoreError("database is locked"), 503, "StoreError", "database is locked"),
        (RuntimeError("secret internals"), 500, "InternalError", "the server failed; see its log"),
    ],
)
async def test_a_failing_item_leaves_the_others_decided(
    client: httpx.AsyncClient, queue: ReviewQueue, failure: Exception, status: int, kind: str, message: str
) -> None:
    first, broken, last = (submit(queue, args={"id": f"t{i}"}) for i in range(3))
    decide = queue.decide

    def flaky(request_id: str, *args: Any, **kwargs: Any) -> Any:
        if request_id == broken.id:
            raise failure
        return decide(request_id, *args, **kwargs)

    queue.decide = flaky  # type: ignore[method-assign]
    items = [item(first.id), item(broken.id), item(last.id)]
    results = (await client.post(URL, json={"items": items}, headers=auth("alice"))).json()["results"]
    assert [r["ok"] for r in results] == [True, False, True]
    assert results[1]["error"] == {
        "status": status,
        "type": kind,
        "error": results[1]["error"]["error"],
        "message": message,
    }
    assert [r.id for r in queue.pending()] == [broken.id]

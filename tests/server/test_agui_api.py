"""``/api/ag-ui``: a thread's pending requests as AG-UI interrupts, and resume entries as decisions."""

from __future__ import annotations

from typing import Any

import httpx

from crossgate import Edit, Reject, ReviewQueue
from crossgate.agui import payload_of
from crossgate.model import RequestStatus
from tests.server.conftest import auth, submit


def entry(request_id: str, payload: dict[str, Any] | None = None, status: str = "resolved") -> dict[str, Any]:
    return {"interruptId": request_id, "status": status, **({"payload": payload} if payload is not None else {})}


async def resume(
    client: httpx.AsyncClient, thread: str, *entries: dict[str, Any], who: str = "alice"
) -> httpx.Response:
    return await client.post("/api/ag-ui/resume", json={"threadId": thread, "resume": list(entries)}, headers=auth(who))


async def test_a_thread_waits_on_its_pending_requests_as_interrupts(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    first, second = submit(queue, run="thread-1"), submit(queue, run="thread-1", args={"id": "t2"})
    submit(queue, run="thread-2")
    queue.decide(submit(queue, run="thread-1", args={"id": "t3"}).id, Reject(message="no"), reviewer="ann")
    response = await client.get("/api/ag-ui/interrupts", params={"thread": "thread-1"}, headers=auth("alice"))
    outcome = response.json()
    assert outcome["type"] == "interrupt"
    assert [i["id"] for i in outcome["interrupts"]] == [first.id, second.id], "pending ones, oldest first"
    assert outcome["interrupts"][0]["toolCallId"] == "c1" and outcome["interrupts"][0]["reason"] == "tool_call"
    idle = await client.get("/api/ag-ui/interrupts", params={"thread": "thread-9"}, headers=auth("alice"))
    assert idle.json() == {"type": "success"}
    assert (await client.get("/api/ag-ui/interrupts", params={"thread": "thread-1"})).status_code == 401


async def test_resume_entries_decide_and_cancel_through_the_queue(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    approve, edit, reject, dismiss = (submit(queue, run="th", args={"id": f"t{i}"}) for i in range(1, 5))
    response = await resume(
        client,
        "th",
        entry(approve.id, {"approved": True, "approvedActionFingerprint": approve.fingerprint, "note": "ok"}),
        entry(edit.id, {"approved": True, "editedArgs": {"id": "t9"}}),
        entry(reject.id, {"approved": False, "message": "t3 is a real ticket; close it instead."}),
        entry(dismiss.id, status="cancelled"),
    )
    assert response.status_code == 200
    assert [r["ok"] for r in response.json()["results"]] == [True] * 4
    decided = queue.get(approve.id)
    assert decided.decision is not None and decided.decision.kind.value == "approve"
    assert (decided.decision.reviewer, decided.decision.channel, decided.decision.note) == ("alice", "ag-ui", "ok")
    assert queue.get(edit.id).approved_args() == {"id": "t9"}
    rejected = queue.get(reject.id).resolution()
    assert isinstance(rejected, Reject) and rejected.message == "t3 is a real ticket; close it instead."
    closed = queue.get(dismiss.id)
    assert closed.status is RequestStatus.CANCELLED and "not run" in (closed.closed_reason or "")
    idle = await client.get("/api/ag-ui/interrupts", params={"thread": "th"}, headers=auth("alice"))
    assert idle.json() == {"type": "success"}


async def test_a_resume_that_leaves_an_interrupt_open_decides_nothing(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    first, second = submit(queue, run="th"), submit(queue, run="th", args={"id": "t2"})
    head = queue.store.audit_head()
    response = await resume(client, "th", entry(first.id, {"approved": True}))
    assert response.status_code == 422
    assert f"missing {second.id}" in response.json()["message"] and "nothing was decided" in response.json()["message"]
    assert queue.store.audit_head() == head
    assert queue.get(first.id).status is RequestStatus.PENDING


async def test_each_entry_is_refused_on_its_own_with_the_reason(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    good = submit(queue, run="th", framework="langgraph")
    bad_payload = submit(queue, run="th", framework="langgraph", args={"id": "t2"})
    out_of_scope = submit(queue, run="th", framework="openai-agents", args={"id": "t3"})
    elsewhere = submit(queue, run="other", framework="langgraph", args={"id": "t4"})
    response = await resume(
        client,
        "th",
        entry(good.id, {"approved": True}),
        entry(bad_payload.id, {"approved": False}),
        entry(out_of_scope.id, {"approved": True}),
        entry(elsewhere.id, {"approved": True}),
        entry("req_missing", {"approved": True}),
        who="bob",
    )
    results = response.json()["results"]
    assert results[0]["ok"] is True
    assert [(r["error"]["status"], r["error"]["type"]) for r in results[1:]] == [
        (422, "InvalidDecisionError"),
        (403, "ForbiddenError"),
        (422, "InvalidDecisionError"),
        (404, "NotFoundError"),
    ]
    assert "a refusal needs a message" in results[1]["error"]["message"]
    assert "another thread" in results[3]["error"]["message"]
    for request in (bad_payload, out_of_scope, elsewhere):
        assert queue.get(request.id).status is RequestStatus.PENDING


async def test_a_replayed_resume_changes_nothing_and_a_different_answer_conflicts(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, run="th")
    answer = entry(request.id, {"approved": True, "editedArgs": {"id": "t7"}})
    assert (await resume(client, "th", answer)).json()["results"][0]["ok"] is True
    head = queue.store.audit_head()
    replay = (await resume(client, "th", answer)).json()["results"][0]
    assert replay["ok"] is True and replay["request"]["decision"]["args"] == {"id": "t7"}
    assert queue.store.audit_head() == head, "a replay records nothing"
    other = (await resume(client, "th", entry(request.id, {"approved": True}))).json()["results"][0]
    assert (other["ok"], other["error"]["status"]) == (False, 409)
    assert queue.get(request.id).approved_args() == {"id": "t7"}
    assert payload_of(Edit(args={"id": "t7"})) == answer["payload"]


async def test_the_person_a_run_acts_for_cannot_resume_their_own_interrupt(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, run="th", requested_by="alice")
    result = (await resume(client, "th", entry(request.id, {"approved": True}))).json()["results"][0]
    assert (result["ok"], result["error"]["status"]) == (False, 403)
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_malformed_resumes_are_refused_whole_and_decide_nothing(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    request = submit(queue, run="th")
    head = queue.store.audit_head()
    bodies: list[Any] = [
        {"resume": [entry(request.id, {"approved": True})]},
        {"threadId": "th", "resume": []},
        {"threadId": "th", "resume": [{"interruptId": request.id, "status": "approved"}]},
        {"threadId": "th", "resume": [entry(request.id, {"approved": True})] * 101},
        {"threadId": "th", "resume": [{"status": "resolved", "payload": {"approved": True}}]},
        ["not", "an", "object"],
    ]
    for body in bodies:
        response = await client.post("/api/ag-ui/resume", json=body, headers=auth("alice"))
        assert response.status_code == 422, (body, response.text)
        assert response.json()["message"]
    missing_thread = await client.get("/api/ag-ui/interrupts", headers=auth("alice"))
    assert missing_thread.status_code == 422
    assert queue.store.audit_head() == head
    assert queue.get(request.id).status is RequestStatus.PENDING


async def test_a_replayed_approval_of_a_request_that_needs_two_counts_once(
    client: httpx.AsyncClient, queue: ReviewQueue
) -> None:
    queue.policy = queue.policy.model_copy(
        update={"rules": tuple(r.model_copy(update={"approvals": 2}) for r in queue.policy.rules)}
    )
    request = submit(queue, run="th", framework="langgraph")
    answer = entry(request.id, {"approved": True})
    for _ in range(2):
        result = (await resume(client, "th", answer)).json()["results"][0]
        assert result["ok"] is True and result["request"]["status"] == "pending"
    assert queue.approvers(request.id) == ["alice"], "the replay added no approval"
    other = (await resume(client, "th", answer, who="bob")).json()["results"][0]
    assert other["ok"] is True and other["request"]["status"] == "decided"

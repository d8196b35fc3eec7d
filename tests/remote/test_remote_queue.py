"""RemoteQueue against a live server: the same objects and the same errors as a ReviewQueue in process."""

from __future__ import annotations

import asyncio

import pytest

from crossgate import (
    AlreadyAppliedError,
    Approve,
    ConfigurationError,
    ConflictError,
    Edit,
    FingerprintMismatchError,
    NotFoundError,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Policy,
    Reject,
    RequestCancelledError,
    RequestQuery,
    RequestStatus,
    ReviewQueue,
    ToolCall,
    VerdictKind,
    open_queue,
)
from crossgate.adapter import run_checked
from crossgate.remote import TOKEN_ENV, CredentialRefusedError, RemoteQueue
from tests.remote.server import AGENT_TOKEN, OTHER_TOKEN, REVIEWERS
from tests.server.conftest import POLICY

Served = tuple[str, ReviewQueue]


def _call(tool: str = "delete_ticket", ticket: str = "t1", call_id: str = "c1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool=tool, args={"id": ticket}, call_id=call_id, run="run-1")


class Tool:
    def __init__(self) -> None:
        self.calls: list[object] = []

    async def __call__(self, args: dict[str, object]) -> str:
        self.calls.append(args)
        return f"deleted {args['id']}"


def test_submit_wait_apply_and_record_like_the_queue_in_process(served: Served) -> None:
    url, reviewer = served
    with RemoteQueue(url, token=AGENT_TOKEN) as queue:
        assert queue.policy == POLICY
        assert queue.evaluate(_call("read_ticket")).kind is VerdictKind.ALLOW
        allowed = queue.submit(_call("read_ticket"))
        assert allowed.verdict.kind is VerdictKind.ALLOW and allowed.request is None
        submission = queue.submit(_call(), request_id="req-1", requested_by="pat")
        assert submission.stored and submission.request is not None and submission.request.id == "req-1"
        assert queue.submit(_call(), request_id="req-1").request == queue.get("req-1"), "asking again: same request"
        with pytest.raises(FingerprintMismatchError):
            queue.submit(_call(ticket="t2"), request_id="req-1")

        async def scenario() -> tuple[RequestStatus, RequestStatus, int]:
            waiter = asyncio.create_task(queue.wait("req-1", timeout=30))
            await asyncio.sleep(0.3)
            assert not waiter.done(), "still pending: the wait holds"
            await asyncio.to_thread(reviewer.decide, "req-1", Approve(), reviewer="ann")
            decided = await waiter
            tool = Tool()
            answer = await run_checked(queue, decided, {"id": "t1"}, tool, actor="agent")
            again = await run_checked(queue, decided, {"id": "t1"}, tool, actor="agent")
            assert answer.ran and not again.ran
            return decided.status, queue.get("req-1").status, len(tool.calls)

        assert asyncio.run(scenario()) == (RequestStatus.DECIDED, RequestStatus.APPLIED, 1)
        outcome = queue.outcome("req-1")
        assert outcome is not None and outcome.payload["ran"] is True
        with pytest.raises(AlreadyAppliedError):
            queue.mark_applied("req-1", args={"id": "t1"})
    kinds = [e.kind for e in reviewer.events(request_id="req-1")]
    assert kinds == ["submitted", "decided", "applied", "ran", "not_run"], "the refused retry is recorded too"


def test_the_errors_are_the_queues_own_classes(served: Served) -> None:
    url, reviewer = served
    with RemoteQueue(url, token=AGENT_TOKEN) as queue:
        with pytest.raises(NotFoundError):
            queue.get("req-none")
        request = queue.submit(_call(), request_id="req-2").request
        assert request is not None
        with pytest.raises(ConflictError):
            queue.mark_applied(request, args={"id": "t1"})  # pending: nothing may run
        reviewer.decide("req-2", Edit(args={"id": "t9"}), reviewer="ann")
        with pytest.raises(FingerprintMismatchError):
            queue.mark_applied("req-2", args={"id": "t1"})
        assert queue.mark_applied("req-2", args={"id": "t9"}).status is RequestStatus.APPLIED
        assert queue.outcome("req-2") is None, "applied, but no outcome yet"
        queue.submit(_call(ticket="t3", call_id="c3"), request_id="req-3")
        queue.cancel("req-3", reason="The user left.")
        with pytest.raises(RequestCancelledError):
            queue.cancel("req-3")
        assert queue.get("req-3").resolution() == Reject(
            message="The user left.", fingerprint=queue.get("req-3").fingerprint
        )


def test_park_claim_and_finish_a_run_once(served: Served) -> None:
    url, reviewer = served
    with RemoteQueue(url, token=AGENT_TOKEN) as queue:
        prepared = queue.prepare(_call(), request_id="req-p")
        assert not prepared.stored and prepared.request is not None
        with pytest.raises(NotFoundError):
            queue.get("req-p")
        parked = queue.park(
            framework="openai-agents",
            run="run-1",
            request_ids=["req-p"],
            state="STATE",
            new_requests=[prepared.request],
        )
        assert queue.get("req-p").status is RequestStatus.PENDING
        assert [p.id for p in queue.parked_runs(framework="openai-agents")] == [parked.id]
        assert not queue.is_ready(parked)
        reviewer.decide("req-p", Approve(), reviewer="ann")
        assert queue.is_ready(parked)
        claimed = queue.claim_parked(parked, owner="w1", lease_seconds=30)
        assert claimed.state == "STATE" and claimed.status is ParkedRunStatus.RESUMING
        with pytest.raises(ParkedRunClaimedError):
            queue.claim_parked(parked.id, owner="w2")
        assert queue.finish_parked(claimed, owner="w1", outcome="finished").status is ParkedRunStatus.RESUMED
        with pytest.raises(ParkedRunClaimedError):
            queue.claim_parked(parked.id, owner="w2")
        assert queue.get_parked(parked.id).outcome == "finished"


def test_an_agent_sees_only_its_own(served: Served) -> None:
    url, _ = served
    with RemoteQueue(url, token=AGENT_TOKEN) as mine, RemoteQueue(url, token=OTHER_TOKEN) as theirs:
        mine.submit(_call(), request_id="req-mine")
        theirs.submit(_call(ticket="t2"), request_id="req-theirs")
        assert [r.id for r in mine.list_requests().items] == ["req-mine"]
        page = theirs.list_requests(RequestQuery(statuses=(RequestStatus.PENDING,), newest_first=False, limit=10))
        assert [r.id for r in page.items] == ["req-theirs"]
        with pytest.raises(NotFoundError):
            theirs.get("req-mine")
        with pytest.raises(NotFoundError):
            theirs.cancel("req-mine")
        assert mine.get("req-mine").status is RequestStatus.PENDING


def test_credentials_are_checked_and_never_sent_in_clear(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = served
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ConfigurationError, match=TOKEN_ENV):
        RemoteQueue(url)
    with pytest.raises(ConfigurationError, match="in clear"):
        RemoteQueue("http://review.example.com", token=AGENT_TOKEN)
    with pytest.raises(ConfigurationError):
        RemoteQueue("ftp://127.0.0.1/", token=AGENT_TOKEN)
    RemoteQueue("http://review.internal", token=AGENT_TOKEN, allow_plain_http=True).close()
    for token in (REVIEWERS["ann"], "nobody-holds-this-token"):
        with RemoteQueue(url, token=token) as queue, pytest.raises(CredentialRefusedError):
            queue.submit(_call())
    monkeypatch.setenv(TOKEN_ENV, AGENT_TOKEN)
    with RemoteQueue(url) as queue:
        assert queue.evaluate(_call()).kind is VerdictKind.ASK


def test_open_queue_names_a_store_or_a_server(
    served: Served, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = served
    remote = open_queue(url, token=AGENT_TOKEN, policy=POLICY)
    assert isinstance(remote, RemoteQueue)
    remote.close()
    with pytest.raises(ConfigurationError, match="not the one"):
        open_queue(url, token=AGENT_TOKEN, policy=Policy())  # the agent believes in another policy
    local = open_queue(f"{tmp_path}/local.db", policy=POLICY)
    assert isinstance(local, ReviewQueue)
    local.close()
    with pytest.raises(ConfigurationError):
        open_queue(f"{tmp_path}/local.db", token=AGENT_TOKEN)
    monkeypatch.setenv("CROSSGATE_DB", url)
    monkeypatch.setenv(TOKEN_ENV, AGENT_TOKEN)
    from_env = open_queue()
    assert isinstance(from_env, RemoteQueue)
    from_env.close()

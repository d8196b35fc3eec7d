"""The adapter kit (``crossgate.adapter``): the check before a tool runs, the resume sequence, the
id recipe, the queue protocol, and the import layering that keeps the core at the bottom."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from crossgate import (
    ApprovalRequest,
    Approve,
    Edit,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    StoreError,
    ToolCall,
    VerdictKind,
)
from crossgate.adapter import (
    AdapterQueue,
    crossgate_cause,
    request_id,
    resume_leased,
    run_checked,
    run_checked_sync,
)
from crossgate.model import JsonObject
from crossgate.policy.rules import Policy, PolicyRule
from crossgate.remote import RemoteQueue, ServerUnavailableError
from crossgate.runs import Finished, Parked
from crossgate.stores.memory import MemoryStore
from tests.support.clock import FakeClock

ROOT = Path(__file__).resolve().parents[2]
ASK = PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket", apply_within_seconds=60)
DENY = PolicyRule(name="no-deletes", verdict=VerdictKind.DENY, tool="delete_ticket", reason="deletes are frozen")
SDKS = (
    "agents",
    "agent_framework",
    "claude_agent_sdk",
    "google",
    "langgraph",
    "langchain",
    "langchain_core",
    "pydantic_ai",
)
ADAPTERS = {
    "agent-framework": "crossgate_agent_framework",
    "claude": "crossgate_claude",
    "google-adk": "crossgate_google_adk",
    "langgraph": "crossgate_langgraph",
    "openai": "crossgate_openai",
}


def _queue(clock: FakeClock | None = None) -> ReviewQueue:
    return ReviewQueue(MemoryStore(), Policy(rules=(ASK,)), clock=clock or FakeClock())


def _asked(queue: ReviewQueue, args: JsonObject | None = None) -> ApprovalRequest:
    call = ToolCall(framework="kit", tool="delete_ticket", args=args or {"id": "t3"}, call_id="c1", run="r1")
    request = queue.submit(call, request_id=request_id("kit", "r1", "c1")).request
    assert request is not None
    return request


class Tool:
    """A tool body that remembers every call it got."""

    def __init__(self) -> None:
        self.calls: list[JsonObject] = []

    async def __call__(self, args: JsonObject) -> str:
        self.calls.append(args)
        return f"deleted {args['id']}"


def _executed(queue: ReviewQueue, request: ApprovalRequest) -> list[dict[str, Any]]:
    return [dict(e.payload) for e in queue.events(request_id=request.id) if e.kind in ("ran", "not_run")]


def test_approve_runs_the_tool_once_marks_it_applied_and_records_the_result() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert (answer.ran, answer.reply, tool.calls) == (True, "deleted t3", [{"id": "t3"}])
    assert queue.get(request.id).status is RequestStatus.APPLIED
    assert [(e["ran"], e["result"]) for e in _executed(queue, request)] == [(True, "deleted t3")]


def test_a_second_application_is_refused_and_told_what_happened_first() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    again = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert not again.ran and len(tool.calls) == 1
    assert "already ran" in again.message and "deleted t3" in again.message


def test_edit_runs_the_reviewers_arguments() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Edit(args={"id": "t4"}), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert answer.ran and tool.calls == [{"id": "t4"}]


def test_a_decision_for_other_arguments_than_the_ones_about_to_run_is_refused() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Edit(args={"id": "t4"}), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t9"}, tool, actor="kit"))
    assert not answer.ran and tool.calls == [] and "reviewed for other arguments" in answer.message
    assert queue.get(request.id).status is RequestStatus.DECIDED  # not used up: the right call may still apply it
    assert [e["ran"] for e in _executed(queue, request)] == [False]


def test_a_decision_on_another_tools_call_is_refused_for_the_tool_about_to_run() -> None:
    """An adapter that finds the request by a call id from SDK state says which tool is about to run."""
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit", tool="drop_database"))
    assert not answer.ran and tool.calls == []
    reviewed = f"request {request.id} was reviewed for delete_ticket, not for drop_database."
    assert answer.message == f"crossgate did not run drop_database: {reviewed}"
    assert queue.get(request.id).status is RequestStatus.DECIDED, "the reviewer's decision is not used up"
    same = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit", tool="delete_ticket"))
    assert same.ran and tool.calls == [{"id": "t3"}]


def test_reject_does_not_run_and_the_model_reads_the_message() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Reject(message="t3 is a customer's"), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert (answer.ran, answer.reply, tool.calls, answer.responded) == (False, "t3 is a customer's", [], False)
    assert queue.get(request.id).status is RequestStatus.REJECTED
    assert [(e["ran"], e["result"]) for e in _executed(queue, request)] == [(False, "t3 is a customer's")]


def test_respond_answers_with_the_reviewers_content_instead_of_running() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Respond(content="already gone"), reviewer="ann")
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert (answer.ran, answer.reply, tool.calls, answer.responded) == (False, "already gone", [], True)
    assert [(e["ran"], e["result"]) for e in _executed(queue, request)] == [(False, "already gone")]


def test_a_pending_request_never_runs() -> None:
    queue, tool = _queue(), Tool()
    request = _asked(queue)
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert not answer.ran and tool.calls == [] and "still pending" in answer.message and not answer.responded
    assert queue.get(request.id).status is RequestStatus.PENDING


def test_an_approval_past_its_window_lapses_instead_of_running() -> None:
    clock, tool = FakeClock(), Tool()
    queue = _queue(clock)
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    clock.advance(61)
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert not answer.ran and tool.calls == [] and "lapsed" in answer.message.lower()
    assert queue.get(request.id).status is RequestStatus.EXPIRED


def test_a_policy_deny_added_after_the_approval_wins_at_apply_time() -> None:
    queue, tool = _queue(), Tool()
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    queue.policy = Policy(rules=(DENY,))
    answer = asyncio.run(run_checked(queue, request, {"id": "t3"}, tool, actor="kit"))
    assert (answer.ran, answer.reply, tool.calls) == (False, "deletes are frozen", [])
    assert queue.get(request.id).status is RequestStatus.CANCELLED


def test_a_failing_tool_is_recorded_as_ran_and_failed() -> None:
    queue = _queue()
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")

    async def broken(args: JsonObject) -> str:
        raise OSError("disk full")

    with pytest.raises(OSError):
        asyncio.run(run_checked(queue, request, {"id": "t3"}, broken, actor="kit"))
    assert [(e["ran"], e["error"]) for e in _executed(queue, request)] == [(True, "OSError: disk full")]


def test_the_sync_variant_is_the_same_check() -> None:
    queue, ran = _queue(), list[JsonObject]()
    approved = queue.decide(_asked(queue).id, Approve(), reviewer="ann")

    def body(args: JsonObject) -> str:
        ran.append(args)
        return "ok"

    assert run_checked_sync(queue, approved, {"id": "t3"}, body, actor="kit").reply == "ok"
    assert not run_checked_sync(queue, approved, {"id": "t3"}, body, actor="kit").ran
    assert ran == [{"id": "t3"}]


def test_the_request_id_recipe_is_deterministic_and_keeps_the_langgraph_ids() -> None:
    assert request_id("oa", "r1", "agent", "c1") == request_id("oa", "r1", "agent", "c1")
    assert request_id("oa", "r1", "agent", "c1") != request_id("oa", "r1", "agent", "c2")
    assert request_id("oa", "r1", "ab", "c") != request_id("oa", "r1", "a", "bc")  # parts never run together
    # The id LangGraph stored before the kit, for ("agent", "th", 1, "c1"): it still finds its request.
    assert request_id("lc", "agent", "th", 1, "c1") == "req_lc_" + _legacy_langchain("th", 1, "c1")


def _legacy_langchain(thread: str, turn: int, call_id: str) -> str:
    import hashlib

    from crossgate import canonical_json

    return hashlib.sha256(canonical_json(["agent", thread, turn, call_id]).encode()).hexdigest()[:32]


def _parked(queue: ReviewQueue) -> tuple[str, ApprovalRequest]:
    request = queue.decide(_asked(queue).id, Approve(), reviewer="ann")
    parked = queue.park(framework="kit", run="r1", request_ids=[request.id], state="{}")
    return parked.id, request


def test_the_resume_sequence_takes_over_a_run_whose_resumer_died_and_nothing_runs_twice() -> None:
    clock, tool = FakeClock(), Tool()
    queue = _queue(clock)
    parked_id, request = _parked(queue)

    async def apply(_claimed: Any) -> Finished[str] | Parked:
        answer = await run_checked(queue, request, {"id": "t3"}, tool, actor="kit")
        return Finished(run="r1", result=str(answer.reply))

    async def dies(_claimed: Any) -> Finished[str] | Parked:
        await run_checked(queue, request, {"id": "t3"}, tool, actor="kit")
        raise asyncio.CancelledError  # the process is killed mid-resume: the lease stays

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(resume_leased(queue, parked_id, owner="first", lease_seconds=30, body=dies))
    with pytest.raises(ParkedRunClaimedError):  # the first resumer's lease is still live
        asyncio.run(resume_leased(queue, parked_id, owner="second", lease_seconds=30, body=apply))
    clock.advance(31)
    outcome = asyncio.run(resume_leased(queue, parked_id, owner="second", lease_seconds=30, body=apply))
    assert isinstance(outcome, Finished) and "already ran" in outcome.result and len(tool.calls) == 1
    finished = queue.get_parked(parked_id)
    assert (finished.status, finished.attempts) == (ParkedRunStatus.RESUMED, 2)


def test_a_failing_resume_marks_the_run_failed_with_its_error() -> None:
    queue = _queue()
    parked_id, _ = _parked(queue)

    async def broken(_claimed: Any) -> Finished[str] | Parked:
        raise ValueError("state unreadable")

    with pytest.raises(ValueError):
        asyncio.run(resume_leased(queue, parked_id, owner="w", lease_seconds=30, body=broken))
    failed = queue.get_parked(parked_id)
    assert failed.status is ParkedRunStatus.FAILED and "state unreadable" in (failed.outcome or "")


def test_review_queue_is_an_adapter_queue() -> None:
    queue: AdapterQueue = _queue()  # mypy checks this assignment against the protocol
    assert queue.evaluate(ToolCall(framework="kit", tool="read", args={})).kind is VerdictKind.ASK


def test_remote_queue_is_an_adapter_queue() -> None:
    remote = RemoteQueue("http://127.0.0.1:9", token="agent-token-0000001", retry_seconds=0.2)
    queue: AdapterQueue = remote  # mypy checks this assignment against the protocol
    try:
        with pytest.raises(ServerUnavailableError, match="nothing was run"):  # port 9: nobody answers
            queue.evaluate(ToolCall(framework="kit", tool="read", args={}))
    finally:
        remote.close()


def _imports(package: Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_no_core_module_imports_an_adapter_or_an_sdk() -> None:
    imported = _imports(ROOT / "core" / "crossgate")
    assert imported.isdisjoint({*SDKS, *ADAPTERS.values(), "crossgate_pydantic_ai"})


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_no_adapter_imports_another(adapter: str) -> None:
    others = {name for key, name in ADAPTERS.items() if key != adapter} | {"crossgate_pydantic_ai"}
    imported = _imports(ROOT / "adapters" / adapter / ADAPTERS[adapter])
    assert "crossgate" in imported  # the walk reads the adapter's imports
    assert imported.isdisjoint(others)


def test_crossgate_cause_finds_crossgates_error_inside_an_sdks_wrapper() -> None:
    def wrapped(inner: BaseException) -> RuntimeError:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise RuntimeError("event loop cycle failed") from exc
        except RuntimeError as outer:
            return outer

    store_down = StoreError("the database is unreachable")
    assert crossgate_cause(wrapped(store_down)) is store_down
    assert crossgate_cause(store_down) is store_down
    assert crossgate_cause(wrapped(ValueError("a tool's own bug"))) is None, "only crossgate's errors are unwrapped"

"""Calls, policies and reads the queue contract's scenarios share."""

from __future__ import annotations

from typing import Any

from crossgate import (
    ApprovalRequest,
    PolicyRule,
    ReviewQueue,
    ToolCall,
    VerdictKind,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string", "pattern": "^t[0-9]+$"}},
    "required": ["id"],
    "additionalProperties": False,
}


def call(
    ticket: str = "t3", *, tool: str = "delete_ticket", run: str | None = "run-1", agent: str = "triage"
) -> ToolCall:
    return ToolCall(framework="langgraph", tool=tool, args={"id": ticket}, run=run, agent=agent, call_id=f"c-{ticket}")


def submit(queue: ReviewQueue, ticket: str = "t3", **kwargs: Any) -> ApprovalRequest:
    kwargs.setdefault("args_schema", SCHEMA)
    request = queue.submit(call(ticket, run=kwargs.pop("run", "run-1")), **kwargs).request
    assert request is not None
    return request


def snapshot(queue: ReviewQueue, request_id: str) -> tuple[ApprovalRequest, int, int]:
    return queue.get(request_id), queue.store.audit_head()[0], len(queue.rules(include_revoked=True))


TWO = PolicyRule(name="two-eyes", verdict=VerdictKind.ASK, tool="delete_*", approvals=2, reason="Two people sign off.")


def kinds(queue: ReviewQueue, request_id: str) -> list[tuple[str, str | None]]:
    return [(e.kind, e.actor) for e in queue.events(request_id=request_id)]


LAPSING = PolicyRule(name="fresh-approvals", verdict=VerdictKind.ASK, tool="delete_*", apply_within_seconds=600)

"""The records the store contract's tests build: requests, events, parked runs and rules, at a fixed time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crossgate import ApprovalRequest, ParkedRun, RequestStatus, StandingRule, ToolCall, VerdictKind
from crossgate.model import NewEvent

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def make_request(
    n: int,
    *,
    status: RequestStatus = RequestStatus.PENDING,
    expires_at: datetime | None = None,
    framework: str = "langgraph",
    tool: str = "delete_ticket",
    agent: str | None = "triage",
    run: str | None = "run-1",
) -> ApprovalRequest:
    call = ToolCall(framework=framework, tool=tool, args={"id": f"t{n}"}, agent=agent, run=run, call_id=f"c{n}")
    return ApprovalRequest(
        id=f"req-{n}",
        call=call,
        fingerprint=call.fingerprint,
        status=status,
        created_at=T0 + timedelta(seconds=n),
        expires_at=expires_at,
    )


def ev(kind: str, request_id: str | None = None, **payload: object) -> NewEvent:
    return NewEvent(kind=kind, at=T0, request_id=request_id, payload=dict(payload))


def make_parked(n: int = 1) -> ParkedRun:
    return ParkedRun(
        id=f"park-{n}",
        framework="openai-agents",
        run=f"run-{n}",
        request_ids=(f"req-{n}",),
        state='{"opaque": true}',
        created_at=T0,
        updated_at=T0,
    )


def make_rule(n: int) -> StandingRule:
    return StandingRule(id=f"rule-{n}", effect=VerdictKind.ALLOW, tool="read_*", created_at=T0)


def one_chain(store: object) -> bool:
    """True for a store whose log is one hash chain (every store but a partitioned PostgreSQL one)."""
    partitions = getattr(store, "partitions", None)
    return partitions is None or int(partitions()) == 1


def audit_cut(store: object) -> list[tuple[int, int, str]]:
    """A partitioned store's heads (``audit_cut``); one chain's head as a single partition otherwise."""
    cut = getattr(store, "audit_cut", None)
    if cut is not None:
        heads: list[tuple[int, int, str]] = cut()[1]
        return heads
    seq, digest = store.audit_head()  # type: ignore[attr-defined]
    return [(0, int(seq), str(digest))]

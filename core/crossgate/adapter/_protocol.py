"""``AdapterQueue``: exactly what an adapter may call on the review queue.

Derived from what the adapters call. Every argument and result is a pydantic model of
``crossgate.model`` (or a small dataclass of them, ``Submission``), JSON or a plain value, so a second
implementation can serve it over HTTP. ``ReviewQueue`` is the reference implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from crossgate.model import (
    ALL_DECISIONS,
    ApprovalRequest,
    DecisionKind,
    Event,
    JsonObject,
    ParkedRun,
    ParkedRunStatus,
    ToolCall,
    Verdict,
)

if TYPE_CHECKING:
    from crossgate.policy.rules import Policy
    from crossgate.queue import Submission
    from crossgate.stores.base import Page, RequestQuery


class AdapterQueue(Protocol):
    """The queue as an adapter sees it: judge calls, ask and wait, apply, record, park and resume."""

    @property
    def policy(self) -> Policy:
        """The policy the queue judges calls by (an adapter reads it to refuse what it cannot gate)."""

    # judging and asking
    def evaluate(self, call: ToolCall) -> Verdict: ...

    def submit(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission: ...

    def prepare(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission: ...

    def get(self, request_id: str) -> ApprovalRequest: ...

    def list_requests(self, query: RequestQuery | None = None) -> Page[ApprovalRequest]: ...

    async def wait(self, request_id: str, timeout: float | None = None) -> ApprovalRequest: ...

    def cancel(self, request_id: str, *, reason: str = ..., actor: str | None = None) -> ApprovalRequest: ...

    def expire_overdue(self) -> list[ApprovalRequest]: ...

    # applying and recording
    def mark_applied(
        self, request_id: str | ApprovalRequest, *, args: JsonObject | None = None, actor: str | None = None
    ) -> ApprovalRequest: ...

    def record_outcome(
        self,
        request_id: str | ApprovalRequest | None,
        *,
        ran: bool,
        result: str | None = None,
        error: str | None = None,
        call: ToolCall | None = None,
    ) -> None: ...

    def outcome(self, request_id: str) -> Event | None: ...

    def refuse_unverified(
        self,
        target: ApprovalRequest | ToolCall,
        *,
        reason: str,
        problem: str,
        message: str,
        rule: str | None = None,
        actor: str | None = None,
    ) -> ApprovalRequest | None:
        """Record a gate's refusal of what did not verify (closing a decided request); see ``crossgate._refusals``."""

    # parked runs
    def park(
        self,
        *,
        framework: str,
        run: str,
        request_ids: Sequence[str],
        state: str,
        metadata: JsonObject | None = None,
        new_requests: Sequence[ApprovalRequest] = (),
    ) -> ParkedRun: ...

    def get_parked(self, parked_id: str) -> ParkedRun: ...

    def parked_runs(
        self,
        *,
        statuses: Sequence[ParkedRunStatus] = ...,
        framework: str | None = None,
        run: str | None = None,
    ) -> list[ParkedRun]: ...

    def is_ready(self, parked: ParkedRun) -> bool: ...

    def claim_parked(self, parked_id: str | ParkedRun, *, owner: str, lease_seconds: float = 300.0) -> ParkedRun: ...

    def finish_parked(
        self,
        parked_id: str | ParkedRun,
        *,
        owner: str,
        status: ParkedRunStatus = ParkedRunStatus.RESUMED,
        outcome: str | None = None,
    ) -> ParkedRun: ...

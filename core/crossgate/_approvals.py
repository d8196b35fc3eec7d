"""``ReviewQueue``'s four-eyes approvals: a request that needs several different reviewers to approve it.

Each approval before the last is an ``approved`` event (who, through which channel, a note); the request
stays pending, so nothing may run. The approval that brings the count of different reviewers to
``approvals_required`` decides the request, and its ``decided`` event names every approver. Any single
reviewer's rejection decides at once. Approvals are counted from the log after each one is stored, so two
reviewers approving at the same moment both count, and exactly one of them records the decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from crossgate._queue_base import QueueBase
from crossgate.authority.claims import ReviewerKind
from crossgate.decisions import AnyDecision
from crossgate.errors import AlreadyDecidedError, ConflictError, DecisionNotAllowedError
from crossgate.model import DECIDED_STATUSES, ApprovalRequest, Approve, Event, JsonObject

APPROVED = "approved"
"""The event kind of one approval that did not yet decide its request."""
SIGNATURE = "signature"
"""The key of an ``approved`` event's payload that holds the authority's token over that approval."""


def approvers_in(events: Iterable[Event]) -> list[str]:
    """The different reviewers who approved, first approval first, in a request's events."""
    names: list[str] = []
    for event in events:
        if event.kind == APPROVED and event.actor is not None and event.actor not in names:
            names.append(event.actor)
    return names


class ApprovalsMixin(QueueBase):
    """Approvals counted across reviewers for requests whose rule asks for more than one."""

    if TYPE_CHECKING:

        def _record_decision(
            self,
            request: ApprovalRequest,
            stamped: AnyDecision,
            extra: JsonObject | None = None,
            *,
            signatures: tuple[str, ...] = (),
        ) -> ApprovalRequest: ...

        def _sign_decision(
            self, request: ApprovalRequest, stamped: AnyDecision, reviewer_kind: ReviewerKind
        ) -> str | None: ...

    def approvers(self, request_id: str) -> list[str]:
        """The different reviewers who have approved the request so far, first approval first."""
        return approvers_in(self.store.list_events(request_id=request_id))

    def _approval_tokens(self, request_id: str) -> tuple[str, ...]:
        """The signed approvals of the request so far, one per approver (first approval first)."""
        tokens: dict[str, str] = {}
        for event in self.store.list_events(request_id=request_id):
            token = event.payload.get(SIGNATURE)
            if event.kind == APPROVED and event.actor is not None and isinstance(token, str):
                tokens.setdefault(event.actor, token)
        return tuple(tokens.values())

    def _approve_in_turn(
        self, request: ApprovalRequest, approval: Approve, reviewer_kind: ReviewerKind = ReviewerKind.REVIEWER
    ) -> ApprovalRequest:
        """Count ``approval`` (checked and stamped); decide the request once enough reviewers approved.

        Each approval is signed on its own and its token kept in its ``approved`` event; the decision
        carries every approver's token, so the gate counts signed approvals, not events.
        """
        required, reviewer = request.approvals_required, approval.reviewer
        assert reviewer is not None
        if approval.remember is not None:
            raise DecisionNotAllowedError(
                f"request {request.id} needs {required} approvals; a remembered approval would let later calls "
                "skip them, so approve without remember"
            )
        before = self.approvers(request.id)
        if reviewer in before:
            raise ConflictError(
                f"{reviewer} approved request {request.id} already; it needs {required - len(before)} more "
                "approval(s) from other reviewers"
            )
        payload: JsonObject = {"note": approval.note, "approvals": len(before) + 1, "required": required}
        if (token := self._sign_decision(request, approval, reviewer_kind)) is not None:
            payload[SIGNATURE] = token
        self._sign_own(
            self.store.append_event(
                self._event(APPROVED, request, actor=reviewer, channel=approval.channel, payload=payload)
            )
        )
        approvers = self.approvers(request.id)
        if len(approvers) < required:
            return self.get(request.id)
        try:
            return self._record_decision(
                request, approval, {"approvers": list(approvers)}, signatures=self._approval_tokens(request.id)
            )
        except (AlreadyDecidedError, ConflictError):
            # Another reviewer's approval completed the count at the same moment and recorded the decision.
            latest = self.get(request.id)
            if latest.status in DECIDED_STATUSES and isinstance(latest.decision, Approve):
                return latest
            raise

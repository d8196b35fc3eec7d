"""``ReviewQueue``'s signing: each decision and standing rule it records, signed by its authority.

A queue given an :class:`~crossgate.authority.Authority` (the review server's, or an operator's
CLI) signs the canonical claims of every decision it records (``decision_claims``: the request, the
call's fingerprint, the kind and its content, reviewer and reviewer kind, ``decided_at``, ``apply_by``,
the policy version and the approvals required) and of every standing rule it stores. The tokens travel
on the models (``ApprovalRequest.signatures``, ``StandingRule.signature``) and the store keeps them
beside what they sign. A queue without an authority signs nothing, as before.

Signing is not verifying: the process where a tool runs checks the tokens with keys pinned in its own
configuration (``crossgate.adapter``), never with this queue's word for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossgate._queue_base import QueueBase
from crossgate.authority.claims import ReviewerKind, decision_claims, standing_rule_claims
from crossgate.decisions import AnyDecision
from crossgate.model import ApprovalRequest, StandingRule

if TYPE_CHECKING:
    from crossgate.authority.keys import Authority


class SigningMixin(QueueBase):
    """The queue's authority, if it has one, and the two things it signs."""

    authority: Authority | None = None
    """The key this queue signs with; None signs nothing (agents that pin a key then refuse its decisions)."""

    def _signed_policy_version(self) -> int | None:
        """The stored policy version the queue decides under (``policy_version``), if it evaluates one."""
        version = getattr(self, "policy_version", None)
        return version if isinstance(version, int) and not isinstance(version, bool) and version >= 1 else None

    def _sign_decision(self, request: ApprovalRequest, stamped: AnyDecision, reviewer_kind: ReviewerKind) -> str | None:
        """The token over ``stamped`` (checked, with reviewer and decided_at) on ``request``; None unsigned."""
        if self.authority is None:
            return None
        claims = decision_claims(
            request, stamped, reviewer_kind=reviewer_kind, policy_version=self._signed_policy_version()
        )
        return self.authority.sign(claims)

    def _signed_rule(self, rule: StandingRule) -> StandingRule:
        """``rule`` with this queue's token over it; as given when the queue has no authority."""
        if self.authority is None:
            return rule
        return rule.model_copy(update={"signature": self.authority.sign(standing_rule_claims(rule))})

    if TYPE_CHECKING:
        from crossgate.policy.rules import Policy

        policy: Policy

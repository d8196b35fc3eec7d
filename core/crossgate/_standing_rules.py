"""``ReviewQueue``'s standing rules: add, build, list and revoke them, and remember a decision as one."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from crossgate._queue_base import QueueBase
from crossgate.clock import new_id
from crossgate.decisions import AnyDecision
from crossgate.errors import ConflictError, NotFoundError
from crossgate.fingerprint import fingerprint
from crossgate.model import ApprovalRequest, Reject, RememberMatch, RememberScope, StandingRule, VerdictKind


class StandingRulesMixin(QueueBase):
    """Standing rules: each change is stored with its audit event in one transaction."""

    if TYPE_CHECKING:

        def _signed_rule(self, rule: StandingRule) -> StandingRule: ...

    def add_rule(self, rule: StandingRule, *, actor: str | None = None, channel: str = "api") -> StandingRule:
        """Store a standing rule (built by hand, or by ``remember``), signed when the queue has an authority."""
        self.limits.check_text(rule.message, "the rule's message", self.limits.message_bytes)
        rule = self._signed_rule(rule)
        payload = rule.model_dump(mode="json", exclude_none=True)
        self._sign_own(
            self.store.insert_rule(rule, self._event("rule_added", actor=actor, channel=channel, payload=payload))
        )
        return rule

    def new_rule(
        self,
        *,
        effect: VerdictKind | str,
        tool: str,
        match: RememberMatch = RememberMatch.TOOL,
        arg_patterns: Mapping[str, str] | None = None,
        args_fingerprint: str | None = None,
        agent: str | None = None,
        framework: str | None = None,
        scope: RememberScope = RememberScope.FOREVER,
        run: str | None = None,
        session: str | None = None,
        message: str | None = None,
        created_by: str | None = None,
        source_request: str | None = None,
        expires_at: datetime | None = None,
    ) -> StandingRule:
        """Build an unsaved standing rule with a fresh id and the current time (``add_rule`` stores it).

        ``effect`` is allow or deny; pydantic's ValidationError names any field that is not valid.
        """
        return StandingRule(
            id=new_id("rule"),
            created_at=self.now(),
            effect=effect,  # validated (and coerced from text) by the model
            tool=tool,
            match=match,
            arg_patterns=dict(arg_patterns or {}),
            args_fingerprint=args_fingerprint,
            agent=agent,
            framework=framework,
            scope=scope,
            run=run,
            session=session,
            message=message,
            created_by=created_by,
            source_request=source_request,
            expires_at=expires_at,
        )

    def rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        """Standing rules, oldest first."""
        return self.store.list_rules(include_revoked=include_revoked)

    def revoke_rule(self, rule_id: str, *, actor: str | None = None, channel: str = "api") -> StandingRule:
        """Revoke a standing rule; it stops applying at once in every adapter."""
        rule = self.store.get_rule(rule_id)
        if rule is None:
            raise NotFoundError(f"no standing rule with id {rule_id!r}")
        if rule.revoked_at is not None:
            raise ConflictError(f"standing rule {rule_id} was already revoked")
        revoked = rule.model_copy(update={"revoked_at": self.now(), "revoked_by": actor})
        event = self._event("rule_revoked", actor=actor, channel=channel, payload={"rule": rule_id})
        if self.store.revoke_rule(revoked, event) is None:
            raise ConflictError(f"standing rule {rule_id} was already revoked")
        self.sign_state_head()
        return revoked

    def _remember(self, request: ApprovalRequest, decision: AnyDecision, reviewer: str) -> StandingRule:
        remember = decision.remember
        assert remember is not None
        call = request.call
        effect = VerdictKind.DENY if isinstance(decision, Reject) else VerdictKind.ALLOW
        args = request.approved_args() or call.args
        rule = self.new_rule(
            effect=effect,
            tool=call.tool,
            match=remember.match,
            arg_patterns=remember.arg_patterns,
            args_fingerprint=fingerprint(call.tool, args) if remember.match is RememberMatch.EXACT else None,
            agent=call.agent if remember.this_agent_only else None,
            scope=remember.scope,
            run=call.run if remember.scope is RememberScope.RUN else None,
            session=call.session_key if remember.scope is RememberScope.SESSION else None,
            message=decision.message if isinstance(decision, Reject) else None,
            created_by=reviewer,
            source_request=request.id,
            expires_at=remember.expires_at,
        )
        return self.add_rule(rule, actor=reviewer, channel=decision.channel or "api")

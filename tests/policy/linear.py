"""The policy evaluation as it was before the rule index: every rule tested, in order (a reference, not for use).

The index's property test compares ``Policy.evaluate`` with it, and ``bench_policy`` times both in one run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from crossgate.model import EDITED_RETRY, StandingRule, ToolCall, Verdict, VerdictKind
from crossgate.policy import Policy, standing_rule_matches
from crossgate.policy.rules import (
    DEFAULT_REASONS,
    _first,
    _first_standing,
    _from_rule,
    _from_standing_allow,
    apply_window,
)


def naive_evaluate(policy: Policy, call: ToolCall, standing_rules: Sequence[StandingRule], now: datetime) -> Verdict:
    """The linear scan the index replaced, step for step."""
    matched = [r for r in policy.rules if r.matches(call)]
    standing = sorted(
        (s for s in standing_rules if standing_rule_matches(s, call, now)), key=lambda s: (s.created_at, s.id)
    )
    if (deny := _first(matched, VerdictKind.DENY)) is not None:
        return _from_rule(deny)
    if (standing_deny := _first_standing(standing, VerdictKind.DENY)) is not None:
        return Verdict(
            kind=VerdictKind.DENY,
            reason=standing_deny.message or f"A standing rule denies {call.tool}.",
            rule=standing_deny.id,
        )
    standing_allow = _first_standing(standing, VerdictKind.ALLOW)
    asks = [r for r in matched if r.verdict is VerdictKind.ASK]
    if asks:
        if standing_allow is not None and all(r.rememberable for r in asks):
            return _from_standing_allow(standing_allow)
        retries = [s for s in standing if s.effect is VerdictKind.ALLOW and s.created_by == EDITED_RETRY]
        if retries and retries[0].args_fingerprint:
            return _from_standing_allow(retries[0])
        return _from_rule(asks[0])
    if (allow := _first(matched, VerdictKind.ALLOW)) is not None:
        return _from_rule(allow)
    if standing_allow is not None:
        return _from_standing_allow(standing_allow)
    return Verdict(
        kind=policy.default,
        reason=policy.default_reason if policy.default_reason is not None else DEFAULT_REASONS[policy.default],
        allowed_decisions=policy.default_allowed_decisions,
        timeout_seconds=policy.default_timeout_seconds,
        apply_within_seconds=apply_window(policy.default_apply_within_seconds),
    )

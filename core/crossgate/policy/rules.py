"""Policy rules and their evaluation: a pure function from a call (and standing rules) to a verdict.

Order of evaluation, the same in every adapter:

1. a matching policy ``deny`` rule denies (first one in file order gives the reason);
2. a matching standing deny rule denies;
3. a matching policy ``ask`` rule asks, unless every matching ask rule is ``rememberable`` and a
   standing allow rule matches, which allows (an edited retry, ``crossgate.model.EDITED_RETRY``, allows
   whatever the asks say: a reviewer wrote that exact call);
4. a matching policy ``allow`` rule allows;
5. a matching standing allow rule allows;
6. otherwise the policy's default (``ask`` unless configured otherwise).

Where several standing rules match, the oldest one (then the smallest id) is named in the verdict.

Deny beats ask beats allow, and nothing a reviewer remembers can lift a policy deny.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, model_validator

from crossgate.errors import ConfigurationError
from crossgate.fingerprint import canonical_json
from crossgate.limits import MAX_SECONDS
from crossgate.model import (
    ALL_DECISIONS,
    EDITED_RETRY,
    FRAMEWORKS,
    DecisionKind,
    RememberMatch,
    RememberScope,
    StandingRule,
    ToolCall,
    Verdict,
    VerdictKind,
)
from crossgate.policy.arg_index import PolicyRuleIndex
from crossgate.policy.arguments import MISSING as _MISSING
from crossgate.policy.arguments import MatchKind as MatchKind
from crossgate.policy.arguments import as_text as as_text
from crossgate.policy.arguments import lookup_arg as lookup_arg
from crossgate.policy.index import StandingRuleIndex
from crossgate.policy.patterns import (
    PatternError,
    check_glob,
    check_regex,
    glob_match,
    path_match,
    regex_search,
)

DEFAULT_APPLY_WITHIN_SECONDS = 3600.0
"""How long an approval may wait to be applied when its rule says nothing: one hour (docs/policy.md)."""
NEVER = "never"


def _apply_window_input(value: Any) -> Any:
    """One clear error for a window that is neither a positive finite number of seconds nor ``never``."""
    if value is None or value == NEVER:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a number of seconds or 'never'")
    if not math.isfinite(value):
        raise ValueError("Input should be a finite number")
    if not 0 < value <= MAX_SECONDS:
        raise ValueError(f"Input should be greater than 0 and at most {MAX_SECONDS}")
    return float(value)


ApplyWindow = Annotated[float | Literal["never"] | None, BeforeValidator(_apply_window_input)]
"""A rule's ``apply_within_seconds``: seconds, ``never`` (an approval that never lapses), or unset (one hour)."""


def apply_window(value: float | str | None) -> float | None:
    """The seconds an approval may wait under a rule's ``apply_within_seconds``; None for ``never``."""
    if value is None:
        return DEFAULT_APPLY_WITHIN_SECONDS
    return None if value == NEVER else float(value)



class ArgCondition(BaseModel):
    """One condition on one argument (``path`` may be dotted for nested objects)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arg: str = Field(min_length=1)
    kind: MatchKind = MatchKind.GLOB
    pattern: str | None = None
    value: JsonValue = None
    values: tuple[JsonValue, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> ArgCondition:
        if self.kind in (MatchKind.GLOB, MatchKind.PATH, MatchKind.REGEX) and self.pattern is None:
            raise ValueError(f"a {self.kind.value} condition on {self.arg!r} needs a pattern")
        if self.kind is MatchKind.ONE_OF and not self.values:
            raise ValueError(f"a one_of condition on {self.arg!r} needs at least one value")
        if self.kind is MatchKind.REGEX and self.pattern is not None:
            try:
                check_regex(self.pattern)
            except PatternError as exc:
                raise ValueError(f"bad regular expression for {self.arg!r}: {exc}") from None
        if self.kind in (MatchKind.GLOB, MatchKind.PATH) and self.pattern is not None:
            try:
                check_glob(self.pattern, path=self.kind is MatchKind.PATH)
            except PatternError as exc:
                raise ValueError(f"bad {self.kind.value} pattern for {self.arg!r}: {exc}") from None
        return self

    def matches(self, args: dict[str, Any]) -> bool:
        """True if the call's arguments satisfy this condition."""
        found = lookup_arg(args, self.arg)
        if self.kind is MatchKind.ABSENT:
            return found is _MISSING
        if found is _MISSING:
            return False
        if self.kind is MatchKind.PRESENT:
            return True
        if self.kind is MatchKind.EQUALS:
            return canonical_json(found) == canonical_json(self.value)
        if self.kind is MatchKind.ONE_OF:
            return any(canonical_json(found) == canonical_json(v) for v in self.values)
        assert self.pattern is not None
        return match_text(self.kind, self.pattern, as_text(found))


def match_text(kind: MatchKind, pattern: str, text: str) -> bool:
    """Match ``text`` against a glob, path glob or regular expression, in time linear in ``text``."""
    if kind is MatchKind.GLOB:
        return glob_match(pattern, text)
    if kind is MatchKind.PATH:
        return path_match(pattern, text)
    if kind is MatchKind.REGEX:
        return regex_search(pattern, text)
    raise ConfigurationError(f"{kind.value} is not a text match")


class PolicyRule(BaseModel):
    """One ordered rule: which calls it covers and what it says about them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    verdict: VerdictKind
    tool: str = Field(default="*", min_length=1)
    """Glob on the tool name (``delete_*``, ``mcp__tickets__*``)."""
    where: tuple[ArgCondition, ...] = ()
    """Conditions on arguments; all must hold."""
    context: tuple[ArgCondition, ...] = ()
    """Conditions on the call's context (what the adapter or the app said besides the arguments: a tenant,
    Claude's ``permission_mode`` or ``cwd``, a subagent's parent); ``arg`` names the key. All must hold."""
    frameworks: tuple[str, ...] = ()
    """Empty: every framework; otherwise names from :data:`crossgate.model.FRAMEWORKS`."""
    agents: tuple[str, ...] = ()
    reason: str = ""
    """For deny: what the model reads. For ask: what the reviewer reads."""
    description: str | None = None
    allowed_decisions: tuple[DecisionKind, ...] = ALL_DECISIONS
    timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    apply_within_seconds: ApplyWindow = None
    """ask: an approval not applied this long after it was given lapses, and the call does not run. Unset:
    :data:`DEFAULT_APPLY_WITHIN_SECONDS` (one hour); ``never`` (written explicitly): it never lapses."""
    approvals: int = Field(default=1, ge=1, le=10)
    """ask: how many different reviewers must approve (more than one: four eyes; no edit, respond or remember)."""
    rememberable: bool = True
    """False keeps asking even when a reviewer remembered an approval for matching calls."""

    @model_validator(mode="after")
    def _check(self) -> PolicyRule:
        if not self.allowed_decisions:
            raise ValueError(f"rule {self.name!r}: allowed_decisions cannot be empty")
        for field, globs in (("tool", (self.tool,)), ("agents", self.agents)):
            for glob in globs:
                try:
                    check_glob(glob)
                except PatternError as exc:
                    raise ValueError(f"{field}: bad glob {glob!r}: {exc}") from None
        unknown = [f for f in self.frameworks if f not in FRAMEWORKS]
        if unknown:
            raise ValueError(
                f"frameworks: unknown framework {unknown[0]!r} (it would never match); expected {', '.join(FRAMEWORKS)}"
            )
        return self

    def matches(self, call: ToolCall) -> bool:
        """True if this rule covers ``call``."""
        return glob_match(self.tool, call.tool) and self.matches_beyond_tool(call)

    def matches_beyond_tool(self, call: ToolCall) -> bool:
        """True if ``call`` passes everything but the tool glob (frameworks, agents, conditions)."""
        if self.frameworks and call.framework not in self.frameworks:
            return False
        if self.agents and (call.agent is None or not any(glob_match(a, call.agent) for a in self.agents)):
            return False
        if not all(condition.matches(call.args) for condition in self.where):
            return False
        return all(condition.matches(call.context) for condition in self.context)

    def may_match(self, tool: str, *, framework: str, agent: str | None = None) -> bool:
        """True if this rule matches some call of ``tool``, whatever its arguments (``agent=None``: any agent)."""
        if not glob_match(self.tool, tool):
            return False
        if self.frameworks and framework not in self.frameworks:
            return False
        return not self.agents or agent is None or any(glob_match(a, agent) for a in self.agents)

    def matches_every_call(self, tool: str, *, framework: str, agent: str | None = None) -> bool:
        """True if this rule matches every call of ``tool`` by ``agent`` (``agent=None``: by any agent)."""
        if not self.may_match(tool, framework=framework, agent=agent) or self.where or self.context:
            return False
        return not self.agents or agent is not None


def standing_rule_matches(rule: StandingRule, call: ToolCall, now: datetime) -> bool:
    """True if the standing rule is active at ``now`` and covers ``call``."""
    return glob_match(rule.tool, call.tool) and _standing_matches_beyond_tool(rule, call, now)


def _standing_matches_beyond_tool(rule: StandingRule, call: ToolCall, now: datetime) -> bool:
    if not rule.is_active(now):
        return False
    if rule.framework is not None and rule.framework != call.framework:
        return False
    if rule.agent is not None and rule.agent != call.agent:
        return False
    if rule.scope is RememberScope.RUN and (rule.run is None or rule.run != call.run):
        return False
    if rule.scope is RememberScope.SESSION and (rule.session is None or rule.session != call.session_key):
        return False
    if rule.match is RememberMatch.EXACT:
        return rule.args_fingerprint == call.fingerprint
    if rule.match is RememberMatch.PATTERN:
        for arg, pattern in rule.arg_patterns.items():
            found = lookup_arg(call.args, arg)
            if found is _MISSING or not glob_match(pattern, as_text(found)):
                return False
    return True


DEFAULT_REASONS: dict[VerdictKind, str] = {
    VerdictKind.ASK: "No policy rule covers this call, so a person must review it.",
    VerdictKind.ALLOW: "No policy rule covers this call; the policy's default allows it.",
    VerdictKind.DENY: "No policy rule covers this call, and the policy's default denies it.",
}
"""The reason of a default verdict when the policy gives none, so that it matches the verdict."""


class Policy(BaseModel):
    """Ordered rules plus the verdict for calls no rule matches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: tuple[PolicyRule, ...] = ()
    default: VerdictKind = VerdictKind.ASK
    default_reason: str | None = None
    """What the model and reviewers read for a call no rule covers; None: ``DEFAULT_REASONS[default]``."""
    default_allowed_decisions: tuple[DecisionKind, ...] = ALL_DECISIONS
    default_timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    default_apply_within_seconds: ApplyWindow = None
    """The apply window of a call no rule covers: unset, one hour; ``never`` only when written."""
    context_keys: tuple[str, ...] = ()
    """Context keys the app sets (``tenant``), so ``crossgate policy check`` knows rules testing them can match."""

    @model_validator(mode="after")
    def _unique_names(self) -> Policy:
        names = [r.name for r in self.rules]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"rule names must be unique; repeated: {', '.join(duplicates)}")
        return self

    def evaluate(
        self,
        call: ToolCall,
        standing_rules: Iterable[StandingRule] | StandingRuleIndex = (),
        *,
        now: datetime | None = None,
    ) -> Verdict:
        """The verdict for ``call``; pure given the same rules, standing rules and ``now``.

        ``now`` only decides which standing rules have expired; it defaults to the current time. Only the
        rules whose tool glob matches the call's tool are tested (see :mod:`crossgate.policy.index`); pass a
        :class:`StandingRuleIndex` to have the standing rules looked up the same way.
        """
        at = now or datetime.now(UTC)
        matched = [r for r in _index_of(self.rules).candidates(call) if r.matches_beyond_tool(call)]
        # Oldest first, so the verdict does not depend on the order a store happens to list standing rules in.
        index = standing_rules if isinstance(standing_rules, StandingRuleIndex) else StandingRuleIndex(standing_rules)
        standing = [s for s in index.candidates(call.tool) if _standing_matches_beyond_tool(s, call, at)]
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
            if standing_allow is not None and (retry := _edited_retry(standing)) is not None:
                return _from_standing_allow(retry)
            return _from_rule(asks[0])
        if (allow := _first(matched, VerdictKind.ALLOW)) is not None:
            return _from_rule(allow)
        if standing_allow is not None:
            return _from_standing_allow(standing_allow)
        return Verdict(
            kind=self.default,
            reason=self.default_reason if self.default_reason is not None else DEFAULT_REASONS[self.default],
            allowed_decisions=self.default_allowed_decisions,
            timeout_seconds=self.default_timeout_seconds,
            apply_within_seconds=apply_window(self.default_apply_within_seconds),
        )

    def rules_for_tool(self, tool: str, *, framework: str, agent: str | None = None) -> ToolRules:
        """What this policy may say about calls of ``tool`` whose arguments are not known yet.

        For adapters that must decide before any call exists: what to offer a native review screen, or
        whether a tool the SDK runs out of crossgate's reach would be covered by a rule.
        """
        rules = tuple(r for r in self.rules if r.may_match(tool, framework=framework, agent=agent))
        covered = any(r.matches_every_call(tool, framework=framework, agent=agent) for r in rules)
        return ToolRules(rules=rules, default_reachable=not covered)

    def may_ask(self, tool: str, *, framework: str, agent: str | None = None) -> bool:
        """False when no call of ``tool`` can be judged ask, whatever its arguments and the standing rules.

        Standing rules only allow or deny, so an ask comes from an ask rule that may match the tool or from
        an ask default no rule covering every call shadows. An adapter that must say before a call whether
        the SDK should be ready to pause for it (OpenAI's ``needs_approval``) can answer no when False.
        """
        found = self.rules_for_tool(tool, framework=framework, agent=agent)
        if any(rule.verdict is VerdictKind.ASK for rule in found.rules):
            return True
        return found.default_reachable and self.default is VerdictKind.ASK

    def with_rules(self, *rules: PolicyRule) -> Policy:
        """A copy with ``rules`` appended."""
        return self.model_copy(update={"rules": (*self.rules, *rules)})


@dataclass(frozen=True, slots=True)
class ToolRules:
    """The policy rules that may match calls of one tool, whatever their arguments (see ``rules_for_tool``)."""

    rules: tuple[PolicyRule, ...]
    default_reachable: bool
    """False when one of ``rules`` matches every call of the tool, so the policy's default never decides."""


# A policy's rule index, by the identity of its rules tuple (kept alive here, so the id is not reused):
# policies are immutable, and a copy with other rules has another tuple.
_INDEXES: dict[int, tuple[tuple[PolicyRule, ...], PolicyRuleIndex]] = {}
_INDEX_LIMIT = 64


def _index_of(rules: tuple[PolicyRule, ...]) -> PolicyRuleIndex:
    entry = _INDEXES.get(id(rules))
    if entry is not None and entry[0] is rules:
        return entry[1]
    index = PolicyRuleIndex(rules)
    if len(_INDEXES) >= _INDEX_LIMIT:
        _INDEXES.clear()
    _INDEXES[id(rules)] = (rules, index)
    return index


def _first(rules: Sequence[PolicyRule], kind: VerdictKind) -> PolicyRule | None:
    return next((r for r in rules if r.verdict is kind), None)


def _first_standing(rules: Sequence[StandingRule], kind: VerdictKind) -> StandingRule | None:
    return next((r for r in rules if r.effect is kind), None)


def _edited_retry(rules: Sequence[StandingRule]) -> StandingRule | None:
    """The first matching one-shot allow of a call a reviewer wrote (it names the exact arguments)."""
    return next(
        (r for r in rules if r.effect is VerdictKind.ALLOW and r.created_by == EDITED_RETRY and r.args_fingerprint),
        None,
    )


def _from_rule(rule: PolicyRule) -> Verdict:
    # A rule's verdict is the same every time (both are immutable): built once per rule, kept by identity
    # (with the rule, so its id is not reused), as the index is.
    entry = _VERDICTS.get(id(rule))
    if entry is not None and entry[0] is rule:
        return entry[1]
    if len(_VERDICTS) >= _VERDICT_LIMIT:
        _VERDICTS.clear()
    verdict = _new_verdict(rule)
    _VERDICTS[id(rule)] = (rule, verdict)
    return verdict


_VERDICTS: dict[int, tuple[PolicyRule, Verdict]] = {}
_VERDICT_LIMIT = 4096


def _new_verdict(rule: PolicyRule) -> Verdict:
    reason = rule.reason or f"Policy rule {rule.name!r} says {rule.verdict.value}."
    return Verdict(
        kind=rule.verdict,
        reason=reason,
        rule=rule.name,
        allowed_decisions=rule.allowed_decisions,
        description=rule.description,
        timeout_seconds=rule.timeout_seconds,
        apply_within_seconds=apply_window(rule.apply_within_seconds),
        approvals=rule.approvals,
    )


def _from_standing_allow(rule: StandingRule) -> Verdict:
    return Verdict(
        kind=VerdictKind.ALLOW, reason=f"Standing rule {rule.id} allows this call.", rule=rule.id, standing_rule=rule
    )

"""What ``crossgate policy check`` finds in a policy that loads but does not say what it seems to say.

Only what can be proved cheaply is reported, so every finding is true:

- **never matches**: conditions on one argument (or context key) that no value satisfies together
  (``absent`` and another test; ``equals``/``one_of`` with no common value, or none that passes the rule's
  globs and regexes on the same argument). A tool glob that matches no real tool cannot be known, and is not
  guessed at.
- **shadowed**: every call the rule matches is matched by another rule whose verdict wins, so this rule
  never decides: a deny anywhere over an ask or allow, an ask anywhere over an allow, or an earlier rule of
  the same verdict (the first deny, ask or allow in file order decides). Coverage is proved from the rule's
  parts: the tool glob (``*``, the same text, a literal the glob matches, or ``prefix*`` over a longer prefix),
  frameworks, agents, and each condition implied by one of the other rule's on the same argument.
- **context** (a warning): a ``context`` condition on a key no bundled adapter sets (see
  :data:`crossgate.model.CONTEXT_KEYS`), or set only by adapters the rule's ``frameworks`` exclude. Keys the
  app passes itself (``tenant``) are declared in the policy's ``context_keys`` and then not reported.

Unknown frameworks, an empty ``one_of`` or ``tool`` and patterns RE2 cannot run are refused when the policy
loads, so they reach the check as a load error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from crossgate.fingerprint import canonical_json
from crossgate.model import CONTEXT_KEYS, FRAMEWORKS, VerdictKind
from crossgate.policy.patterns import GLOB_CHARS, glob_match
from crossgate.policy.rules import ArgCondition, MatchKind, Policy, PolicyRule

FindingKind = Literal["never-matches", "shadowed", "context"]

_RANK = {VerdictKind.ALLOW: 0, VerdictKind.ASK: 1, VerdictKind.DENY: 2}
_TEXT_KINDS = (MatchKind.GLOB, MatchKind.PATH, MatchKind.REGEX)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with one rule."""

    rule: str
    kind: FindingKind
    message: str

    @property
    def warning(self) -> bool:
        """True for findings the policy can silence (a context key the app sets, declared in ``context_keys``)."""
        return self.kind == "context"


def check_policy(policy: Policy) -> list[Finding]:
    """Every finding for ``policy``'s rules, in rule order."""
    findings: list[Finding] = []
    for index, rule in enumerate(policy.rules):
        contradiction = _contradiction(rule)
        if contradiction is not None:
            findings.append(Finding(rule.name, "never-matches", f"never matches: {contradiction}"))
        else:
            winner = _shadowing(policy.rules, index)
            if winner is not None:
                findings.append(
                    Finding(
                        rule.name,
                        "shadowed",
                        f"shadowed: rule {winner.name!r} ({winner.verdict.value}) matches every call it matches, "
                        "so it never decides",
                    )
                )
        findings.extend(_context_findings(rule, policy.context_keys))
    return findings


# never matches -------------------------------------------------------------------------------------------


def _contradiction(rule: PolicyRule) -> str | None:
    for side, conditions in (("where", rule.where), ("context", rule.context)):
        for arg in dict.fromkeys(c.arg for c in conditions):
            found = _contradicts([c for c in conditions if c.arg == arg])
            if found is not None:
                return f"{side}: {arg!r} {found}"
    return None


def _contradicts(conditions: Sequence[ArgCondition]) -> str | None:
    kinds = {c.kind for c in conditions}
    if MatchKind.ABSENT in kinds and kinds - {MatchKind.ABSENT}:
        return "must be absent, and another condition needs it present"
    values: dict[str, object] | None = None
    for condition in conditions:
        allowed = _exact_values(condition)
        if allowed is not None:
            values = allowed if values is None else {k: v for k, v in values.items() if k in allowed}
    if values is None:
        return None
    texts = [c for c in conditions if c.kind in _TEXT_KINDS]
    arg = conditions[0].arg
    if not any(all(t.matches({arg: value}) for t in texts) for value in values.values()):
        return "has no value that every condition on it accepts"
    return None


def _exact_values(condition: ArgCondition) -> dict[str, object] | None:
    """The values an ``equals`` or ``one_of`` condition allows, by canonical JSON; None for other tests."""
    if condition.kind is MatchKind.EQUALS:
        return {canonical_json(condition.value): condition.value}
    if condition.kind is MatchKind.ONE_OF:
        return {canonical_json(v): v for v in condition.values}
    return None


# shadowed ------------------------------------------------------------------------------------------------


def _shadowing(rules: Sequence[PolicyRule], index: int) -> PolicyRule | None:
    """A rule that decides every call ``rules[index]`` matches, or None."""
    rule = rules[index]
    for other_index, other in enumerate(rules):
        if other_index == index or not _wins_over(other, other_index < index, rule):
            continue
        if _covers(other, rule):
            return other
    return None


def _wins_over(other: PolicyRule, earlier: bool, rule: PolicyRule) -> bool:
    """True if ``other`` decides instead of ``rule`` wherever both match."""
    if _RANK[other.verdict] > _RANK[rule.verdict]:
        return True
    if other.verdict is not rule.verdict or not earlier:
        return False
    # an ask that is not rememberable still keeps a remembered approval from lifting the earlier ask
    return rule.verdict is not VerdictKind.ASK or rule.rememberable or not other.rememberable


def _covers(outer: PolicyRule, inner: PolicyRule) -> bool:
    """True if every call ``inner`` matches is matched by ``outer`` (proved, never guessed)."""
    if not _glob_covers(outer.tool, inner.tool):
        return False
    if outer.frameworks and not (inner.frameworks and set(inner.frameworks) <= set(outer.frameworks)):
        return False
    if outer.agents and not (inner.agents and all(any(_glob_covers(a, b) for a in outer.agents) for b in inner.agents)):
        return False
    return all(_implied(inner.where, c) for c in outer.where) and all(_implied(inner.context, c) for c in outer.context)


def _glob_covers(outer: str, inner: str) -> bool:
    """True if every text the glob ``inner`` matches, the glob ``outer`` matches."""
    if outer in ("*", inner):
        return True
    if not GLOB_CHARS.intersection(inner):
        return glob_match(outer, inner)
    prefix = outer[:-1]
    return outer.endswith("*") and not GLOB_CHARS.intersection(prefix) and _literal_prefix(inner).startswith(prefix)


def _literal_prefix(glob: str) -> str:
    cut = min((glob.index(c) for c in GLOB_CHARS if c in glob), default=len(glob))
    return glob[:cut]


def _implied(conditions: Sequence[ArgCondition], wanted: ArgCondition) -> bool:
    """True if one of ``conditions`` (all of which hold) makes ``wanted`` hold."""
    for condition in conditions:
        if condition.arg != wanted.arg:
            continue
        if condition == wanted:
            return True
        if condition.kind is MatchKind.ABSENT:
            continue
        if wanted.kind is MatchKind.PRESENT or (wanted.kind is MatchKind.GLOB and wanted.pattern == "*"):
            return True
        values = _exact_values(condition)
        if values is not None and all(wanted.matches({wanted.arg: v}) for v in values.values()):
            return True
    return False


# context keys --------------------------------------------------------------------------------------------


def _context_findings(rule: PolicyRule, declared: Sequence[str]) -> list[Finding]:
    frameworks = rule.frameworks or FRAMEWORKS
    reachable = set().union(*(CONTEXT_KEYS.get(f, frozenset()) for f in frameworks))
    setters = {key for keys in CONTEXT_KEYS.values() for key in keys}
    findings = []
    for arg in dict.fromkeys(c.arg for c in rule.context if c.kind is not MatchKind.ABSENT):
        key = arg if arg in setters or arg in declared else arg.split(".", 1)[0]
        if key in reachable or key in declared:
            continue
        if key in setters:
            by = ", ".join(f for f, keys in CONTEXT_KEYS.items() if key in keys)
            problem = f"context {key!r} is set only by {by}, which the rule's frameworks exclude"
        else:
            problem = f"context {key!r} is set by no adapter"
        findings.append(
            Finding(rule.name, "context", f"warning: {problem}; if your app sets it, declare context_keys: [{key}]")
        )
    return findings

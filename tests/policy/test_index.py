"""The rule index is safe: indexed evaluation gives exactly the verdict of a scan over every rule.

The reference (``tests/policy/linear.py``) is the evaluation as it was before the index: every policy
rule tested in file order, every standing rule tested and then sorted oldest first. Hypothesis compares
the two over generated policies, standing rules and calls whose tool names and globs meet every branch
of the index (names, ``*``, literal prefixes of every length, ``?`` and sets, globs that match nothing).
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate.fingerprint import fingerprint
from crossgate.model import FRAMEWORKS, RememberMatch, RememberScope, StandingRule, ToolCall, VerdictKind
from crossgate.policy import Policy, PolicyRule
from crossgate.policy.check import check_policy
from crossgate.policy.index import CACHE_LIMIT, StandingRuleIndex, ToolIndex

from .helpers import NOW
from .linear import naive_evaluate
from .test_properties import args_strategy, conditions

NAMES = ["a", "ab", "abc", "b", "ba", "a_b", "delete_ticket", "delete_user", "read"]
NAME_GLOBS = ["*", "**", "a*", "ab*", "*b", "a?", "?", "[ab]*", "a[!b]*", "delete_*", "*_ticket", "de*te*", "z*", "["]


tools = st.one_of(st.sampled_from(NAMES), st.text("ab_", min_size=1, max_size=4))
tool_globs = st.one_of(st.sampled_from(NAME_GLOBS + NAMES), st.text("ab*?[]!", min_size=1, max_size=4))


@st.composite
def rules(draw: st.DrawFn, index: int) -> PolicyRule:
    return PolicyRule(
        name=f"rule-{index}",
        verdict=draw(st.sampled_from(list(VerdictKind))),
        tool=draw(tool_globs),
        where=tuple(draw(st.lists(conditions(), max_size=2))),
        frameworks=tuple(draw(st.lists(st.sampled_from(FRAMEWORKS[:2]), max_size=1))),
        agents=tuple(draw(st.lists(st.sampled_from(["a*", "b"]), max_size=1))),
        reason=draw(st.sampled_from(["", f"reason {index}"])),
        rememberable=draw(st.booleans()),
    )


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    count = draw(st.integers(0, 12))
    return Policy(rules=tuple(draw(rules(i)) for i in range(count)), default=draw(st.sampled_from(list(VerdictKind))))


@st.composite
def calls(draw: st.DrawFn) -> ToolCall:
    return ToolCall(
        framework=draw(st.sampled_from(FRAMEWORKS[:3])),
        tool=draw(tools),
        args=draw(args_strategy),
        run=draw(st.sampled_from([None, "r1", "r2"])),
        session=draw(st.sampled_from([None, "s1"])),
        agent=draw(st.sampled_from([None, "a1", "b"])),
    )


@st.composite
def standing(draw: st.DrawFn, index: int, call: ToolCall) -> StandingRule:
    match = draw(st.sampled_from(list(RememberMatch)))
    return StandingRule(
        id=f"s{draw(st.integers(0, 9))}-{index}",
        effect=draw(st.sampled_from([VerdictKind.ALLOW, VerdictKind.DENY])),
        tool=draw(st.one_of(tool_globs, st.just(call.tool))),
        match=match,
        arg_patterns={"command": draw(st.sampled_from(["*", "rm *"]))} if match is RememberMatch.PATTERN else {},
        args_fingerprint=fingerprint(call.tool, call.args) if match is RememberMatch.EXACT else None,
        agent=draw(st.sampled_from([None, None, "a1"])),
        scope=draw(st.sampled_from([RememberScope.FOREVER, RememberScope.RUN])),
        run=draw(st.sampled_from([None, "r1"])),
        created_at=NOW - timedelta(minutes=draw(st.integers(0, 2))),
        expires_at=draw(st.sampled_from([None, None, NOW - timedelta(seconds=1)])),
        message=draw(st.sampled_from([None, f"no {index}"])),
    )


@settings(max_examples=400, deadline=None)
@given(policy=policies(), many=st.lists(calls(), min_size=1, max_size=4), data=st.data())
def test_indexed_evaluation_equals_the_linear_scan(policy: Policy, many: list[ToolCall], data: st.DataObject) -> None:
    remembered = [data.draw(standing(i, many[i % len(many)])) for i in range(data.draw(st.integers(0, 6)))]
    index = StandingRuleIndex(remembered)
    for call in many * 2:  # the second round comes from the per-tool caches
        expected = naive_evaluate(policy, call, remembered, NOW)
        assert policy.evaluate(call, remembered, now=NOW) == expected
        assert policy.evaluate(call, index, now=NOW) == expected
        assert policy.evaluate(call, reversed(remembered), now=NOW) == expected


@settings(max_examples=300, deadline=None)
@given(globs=st.lists(tool_globs, max_size=10), names=st.lists(tools, min_size=1, max_size=6))
def test_the_candidates_of_a_tool_are_exactly_the_items_whose_glob_matches_it_in_order(
    globs: list[str], names: list[str]
) -> None:
    items = [PolicyRule(name=f"r{i}", verdict=VerdictKind.ASK, tool=g) for i, g in enumerate(globs)]
    index = ToolIndex(items)
    for name in names:
        assert index.candidates(name) == tuple(
            r for r in items if r.matches(ToolCall(framework="langgraph", tool=name))
        )


def test_the_per_tool_cache_is_bounded_and_still_right_after_it_starts_over() -> None:
    items = [PolicyRule(name="a", verdict=VerdictKind.DENY, tool="t*"), PolicyRule(name="b", verdict=VerdictKind.ASK)]
    index = ToolIndex(items)
    for n in range(CACHE_LIMIT + 10):
        assert [r.name for r in index.candidates(f"t{n}")] == ["a", "b"]
    assert len(index._cache) <= CACHE_LIMIT
    assert [r.name for r in index.candidates("x")] == ["b"]


def test_a_policy_copy_with_other_rules_is_not_answered_from_the_first_ones_index() -> None:
    deny = PolicyRule(name="no-rm", verdict=VerdictKind.DENY, tool="rm")
    first = Policy(rules=(PolicyRule(name="ok", verdict=VerdictKind.ALLOW, tool="rm"),))
    call = ToolCall(framework="langgraph", tool="rm")
    assert first.evaluate(call, now=NOW).kind is VerdictKind.ALLOW
    assert first.with_rules(deny).evaluate(call, now=NOW).kind is VerdictKind.DENY
    assert first.model_copy(update={"rules": (deny,)}).evaluate(call, now=NOW).kind is VerdictKind.DENY


@settings(max_examples=300, deadline=None)
@given(policy=policies(), many=st.lists(calls(), min_size=1, max_size=8))
def test_what_policy_check_reports_is_true(policy: Policy, many: list[ToolCall]) -> None:
    """A rule reported as never matching matches none of the calls; one reported as shadowed can be removed
    without changing any verdict (kind, reason, rule and the rest), with or without standing rules."""
    allow_all = StandingRule(id="s", effect=VerdictKind.ALLOW, tool="*", created_at=NOW)
    for finding in check_policy(policy):
        rule = next(r for r in policy.rules if r.name == finding.rule)
        if finding.kind == "never-matches":
            assert not any(rule.matches(call) for call in many)
        elif finding.kind == "shadowed":
            without = Policy(rules=tuple(r for r in policy.rules if r is not rule), default=policy.default)
            for call in many:
                for remembered in ([], [allow_all]):
                    assert without.evaluate(call, remembered, now=NOW) == policy.evaluate(call, remembered, now=NOW)


@settings(max_examples=400, deadline=None)
@given(policy=policies(), many=st.lists(calls(), min_size=1, max_size=4), data=st.data())
def test_a_tool_the_policy_may_not_ask_about_is_never_judged_ask(
    policy: Policy, many: list[ToolCall], data: st.DataObject
) -> None:
    """``Policy.may_ask`` False (an adapter then skips the SDK's pause machinery) holds for every call of the tool."""
    remembered = [data.draw(standing(i, many[i % len(many)])) for i in range(data.draw(st.integers(0, 6)))]
    for call in many:
        if not policy.may_ask(call.tool, framework=call.framework, agent=call.agent):
            assert policy.evaluate(call, remembered, now=NOW).kind is not VerdictKind.ASK

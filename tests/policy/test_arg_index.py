"""The argument index gives exactly the linear scan's verdicts when many rules share one tool."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate.model import ToolCall
from crossgate.policy import ArgCondition, MatchKind, Policy, PolicyRule
from crossgate.policy.arg_index import MIN_RULES, ArgumentIndex, required_literal
from crossgate.policy.patterns import regex_search
from crossgate.policy.rules import VerdictKind

from .helpers import NOW
from .linear import naive_evaluate

WORDS = [
    "git",
    "diff",
    "status",
    "rm",
    "-rf",
    "/",
    "src",
    "..",
    "a.env",
    "K",
    "\u212a",
    "s",
    "\u017f",
    "DROP",
    "7",
    "é",
    "\u017ftatus",
]
GLOBS = ["git diff*", "git *", "*.env", "rm -rf *", "*", "git status", "src/*", "*rm*", "[gr]it *", "x[", "*K"]
PATHS = ["src/**", "./src/", "**/a.env", "a.env", "/etc/*", "src/*/x", "*.env"]
REGEXES = [
    r"\bdrop\s+table_7\b",
    r"(?i)drop",
    r"(?i)k",
    r"(?i)status",
    "(?i)\u017f",
    r"git\s+diff",
    r"^rm -rf",
    r"ab+c",
    r"s?tatus",
    r"a{0}git",
    r"\x67it",
    r"\.env$",
    r"(rm|git) ",
    r"[a-z]+\.env",
    r"\d+",
    r"é",
]
# Texts that meet the patterns above, so most generated rules match some generated call.
MEETING = [
    "git diff --stat",
    "git status",
    "a.env",
    "src/a.env",
    "./src/../src/x/x",
    "/etc/passwd",
    "rm -rf /",
    "K",
    "\u212a",
    "\u017ftatus",
    "STATUS",
    "drop table_7",
    "DROP   TABLE_7",
    "abbbc",
    "xgit",
    "git ",
    "12",
    "caf\u00e9",
    "x[",
]
texts = (
    st.sampled_from(MEETING)
    | st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
    | st.lists(st.sampled_from(WORDS + MEETING), max_size=3).map("/".join)
)
values = st.one_of(texts, texts, st.integers(0, 2), st.none())


@st.composite
def conditions(draw: st.DrawFn) -> ArgCondition:
    arg = draw(st.sampled_from(["command", "command", "nested.key"]))
    kind = draw(st.sampled_from(list(MatchKind)))
    if kind is MatchKind.GLOB:
        return ArgCondition(arg=arg, kind=kind, pattern=draw(st.sampled_from(GLOBS)))
    if kind is MatchKind.PATH:
        return ArgCondition(arg=arg, kind=kind, pattern=draw(st.sampled_from(PATHS)))
    if kind is MatchKind.REGEX:
        return ArgCondition(arg=arg, kind=kind, pattern=draw(st.sampled_from(REGEXES)))
    if kind is MatchKind.EQUALS:
        return ArgCondition(arg=arg, kind=kind, value=draw(values))
    if kind is MatchKind.ONE_OF:
        return ArgCondition(arg=arg, kind=kind, values=tuple(draw(st.lists(values, min_size=1, max_size=3))))
    return ArgCondition(arg=arg, kind=kind)


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    count = draw(st.integers(MIN_RULES, 30))
    rules = tuple(
        PolicyRule(
            name=f"r{i}",
            verdict=draw(st.sampled_from(list(VerdictKind))),
            tool=draw(st.sampled_from(["Bash", "Bash", "Bash", "*", "B*"])),
            where=tuple(draw(st.lists(conditions(), max_size=3))),
        )
        for i in range(count)
    )
    return Policy(rules=rules, default=draw(st.sampled_from(list(VerdictKind))))


@st.composite
def calls(draw: st.DrawFn) -> ToolCall:
    args = {"command": draw(values)} if draw(st.integers(0, 4)) else {}
    if draw(st.booleans()):
        args["nested"] = {"key": draw(values)}
    return ToolCall(framework="langgraph", tool="Bash", args=args)


@settings(max_examples=300, deadline=None)
@given(policies(), st.lists(calls(), min_size=1, max_size=8))
def test_evaluation_with_many_rules_on_one_tool_equals_the_linear_scan(policy: Policy, many: list[ToolCall]) -> None:
    for call in many:
        assert policy.evaluate(call, now=NOW) == naive_evaluate(policy, call, [], NOW)


@settings(max_examples=300, deadline=None)
@given(policies(), calls())
def test_the_index_only_leaves_out_rules_that_cannot_match(policy: Policy, call: ToolCall) -> None:
    kept = ArgumentIndex(policy.rules).candidates(call)
    assert [r for r in policy.rules if r.matches_beyond_tool(call)] == [r for r in kept if r.matches_beyond_tool(call)]
    assert kept == sorted(kept, key=policy.rules.index)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(REGEXES), texts)
def test_every_match_of_a_regex_contains_its_required_literal(pattern: str, text: str) -> None:
    literal, folded = required_literal(pattern)
    if regex_search(pattern, text):
        assert literal in (text.casefold() if folded else text)


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"(?i)\bdrop\s+table_7\b", ("table_7", True)),
        (r"git\s+diff --stat", ("diff --stat", False)),
        (r"ab+c", ("ab", False)),
        (r"colou?r", ("colo", False)),
        (r"a{2}bc", ("bc", False)),
        (r"\x41\x42cd", ("cd", False)),
        (r"\.env\b", (".env", False)),
        (r"(rm|git) -rf", ("", False)),  # an alternation: no literal is required
        (r"(?s)secret", ("", False)),  # inline flags other than a leading (?i)
        (r"(?i)é", ("", False)),  # folded only for ASCII
        (r"[abc]+", ("", False)),
    ],
)
def test_the_required_literal_of_a_regex(pattern: str, literal: tuple[str, bool]) -> None:
    assert required_literal(pattern) == literal


def test_a_deny_among_five_hundred_rules_on_one_tool_is_found_through_the_index() -> None:
    rules = [
        PolicyRule(
            name=f"allow-{i}",
            verdict=VerdictKind.ALLOW,
            tool="Bash",
            where=(ArgCondition(arg="command", kind=MatchKind.GLOB, pattern=f"npm run task{i} *"),),
        )
        for i in range(500)
    ]
    deny = PolicyRule(
        name="no-force-push",
        verdict=VerdictKind.DENY,
        tool="Bash",
        where=(ArgCondition(arg="command", kind=MatchKind.REGEX, pattern=r"git\s+push\s+--force"),),
    )
    policy = Policy(rules=(*rules, deny))
    verdict = policy.evaluate(ToolCall(framework="langgraph", tool="Bash", args={"command": "git  push --force"}))
    assert (verdict.kind, verdict.rule) == (VerdictKind.DENY, "no-force-push")
    allowed = policy.evaluate(ToolCall(framework="langgraph", tool="Bash", args={"command": "npm run task42 x"}))
    assert (allowed.kind, allowed.rule) == (VerdictKind.ALLOW, "allow-42")

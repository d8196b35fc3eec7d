"""Properties of evaluation over generated policies, calls and standing rules (hypothesis)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate.model import RememberMatch, RememberScope, StandingRule, ToolCall, VerdictKind
from crossgate.policy import ArgCondition, Policy, PolicyRule, parse_claude_rule

from .helpers import NOW

TOOLS = ["read_file", "delete_ticket", "Bash", "write_file", "mcp__tickets__delete_ticket"]
GLOBS = ["*", "read_*", "delete_*", "Bash", "*ticket*", "write_file", "mcp__*", "nothing"]
KEYS = ["command", "path", "id", "target.env"]
WORDS = ["rm", "ls", "-rf", "/", "src", "a.txt", "prod", "1", "..", "&&", "*"]

texts = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
values = st.one_of(texts, st.integers(-2, 2), st.booleans(), st.none())
args_strategy = st.dictionaries(st.sampled_from(["command", "path", "id"]), values, max_size=3).map(
    lambda a: {**a, "target": {"env": "prod"}} if len(a) % 2 else a
)


@st.composite
def conditions(draw: st.DrawFn) -> ArgCondition:
    arg = draw(st.sampled_from(KEYS))
    kind = draw(st.sampled_from(["glob", "path", "regex", "equals", "one_of", "present", "absent"]))
    if kind in ("glob", "path"):
        return ArgCondition(arg=arg, kind=kind, pattern=draw(st.sampled_from(["*", "rm *", "src/**", "**/a.txt", "1"])))
    if kind == "regex":
        return ArgCondition(arg=arg, kind=kind, pattern=draw(st.sampled_from([r"\brm\b", r"^ls", "prod", r"\d"])))
    if kind == "equals":
        return ArgCondition(arg=arg, kind=kind, value=draw(values))
    if kind == "one_of":
        return ArgCondition(arg=arg, kind=kind, values=tuple(draw(st.lists(values, min_size=1, max_size=3))))
    return ArgCondition(arg=arg, kind=kind)


@st.composite
def policy_rules(draw: st.DrawFn, index: int) -> PolicyRule:
    return PolicyRule(
        name=f"rule-{index}",
        verdict=draw(st.sampled_from(list(VerdictKind))),
        tool=draw(st.sampled_from(GLOBS)),
        where=tuple(draw(st.lists(conditions(), max_size=2))),
        frameworks=tuple(draw(st.lists(st.sampled_from(["langgraph", "openai-agents"]), max_size=1))),
        agents=tuple(draw(st.lists(st.sampled_from(["a*", "b"]), max_size=1))),
        rememberable=draw(st.booleans()),
    )


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    count = draw(st.integers(0, 6))
    rules = tuple(draw(policy_rules(i)) for i in range(count))
    return Policy(rules=rules, default=draw(st.sampled_from(list(VerdictKind))))


@st.composite
def standing_rules(draw: st.DrawFn, index: int) -> StandingRule:
    # weighted towards rules that match, so that several match one call and their order is put to the test
    scope = draw(st.sampled_from([RememberScope.FOREVER, RememberScope.FOREVER, *RememberScope]))
    match = draw(st.sampled_from([RememberMatch.TOOL, RememberMatch.PATTERN]))
    age = draw(st.integers(0, 3))  # equal ages are common, so the id must break ties
    return StandingRule(
        id=f"s{draw(st.integers(0, 50))}-{index}",
        effect=draw(st.sampled_from([VerdictKind.ALLOW, VerdictKind.DENY])),
        tool=draw(st.sampled_from(["*", "*", *GLOBS])),
        match=match,
        arg_patterns=draw(st.dictionaries(st.sampled_from(["command", "path"]), st.sampled_from(["*", "rm *"])))
        if match is RememberMatch.PATTERN
        else {},
        agent=draw(st.sampled_from([None, None, "a1"])),
        framework=draw(st.sampled_from([None, None, "langgraph"])),
        scope=scope,
        run=draw(st.sampled_from([None, "r1", "r2"])),
        session=draw(st.sampled_from([None, "s1"])),
        created_at=NOW - timedelta(minutes=age),
        expires_at=draw(st.sampled_from([None, None, NOW - timedelta(seconds=1), NOW + timedelta(hours=1)])),
        revoked_at=draw(st.sampled_from([None, None, NOW - timedelta(minutes=1)])),
    )


@st.composite
def standing_lists(draw: st.DrawFn) -> list[StandingRule]:
    return [draw(standing_rules(i)) for i in range(draw(st.integers(0, 6)))]


@st.composite
def calls(draw: st.DrawFn) -> ToolCall:
    return ToolCall(
        framework=draw(st.sampled_from(["langgraph", "openai-agents", "claude-agent-sdk"])),
        tool=draw(st.sampled_from(TOOLS)),
        args=draw(args_strategy),
        run=draw(st.sampled_from([None, "r1", "r2"])),
        session=draw(st.sampled_from([None, "s1"])),
        agent=draw(st.sampled_from([None, "a1", "b"])),
    )


@settings(max_examples=100, deadline=None)
@given(policy=policies(), call=calls(), standing=standing_lists(), data=st.data())
def test_evaluation_is_deterministic(
    policy: Policy, call: ToolCall, standing: list[StandingRule], data: st.DataObject
) -> None:
    # twins: same age, same coverage, another id, so that only a stable tie-break keeps the verdict the same
    standing = standing + [s.model_copy(update={"id": f"{s.id}-twin"}) for s in standing[:3]]
    first = policy.evaluate(call, standing, now=NOW)
    assert policy.evaluate(call, standing, now=NOW) == first
    shuffled = data.draw(st.permutations(standing))
    assert policy.evaluate(call, shuffled, now=NOW) == first
    rebuilt = Policy.model_validate_json(policy.model_dump_json())
    assert rebuilt.evaluate(ToolCall.model_validate_json(call.model_dump_json()), standing, now=NOW) == first


def _matching_deny(call: ToolCall, how: int) -> PolicyRule:
    """A deny rule that certainly covers ``call``, in one of a few shapes."""
    if how == 0 or not call.args:
        return PolicyRule(name="the-deny", verdict="deny", tool=call.tool, reason="no")
    key, value = sorted(call.args.items())[0]
    condition = ArgCondition(arg=key, kind="equals", value=value)
    return PolicyRule(name="the-deny", verdict="deny", tool="*", where=(condition,), reason="no")


@settings(max_examples=100, deadline=None)
@given(
    policy=policies(),
    call=calls(),
    standing=standing_lists(),
    how=st.integers(0, 1),
    position=st.integers(0, 6),
    allows=st.lists(st.sampled_from(GLOBS), max_size=3),
)
def test_a_matching_policy_deny_is_never_overridden(
    policy: Policy,
    call: ToolCall,
    standing: list[StandingRule],
    how: int,
    position: int,
    allows: list[str],
) -> None:
    deny = _matching_deny(call, how)
    extra = tuple(
        PolicyRule(name=f"allow-{i}", verdict="allow", tool=glob, rememberable=True) for i, glob in enumerate(allows)
    )
    everything_allowed = [
        *standing,
        StandingRule(id="allow-all", effect=VerdictKind.ALLOW, tool="*", created_at=NOW - timedelta(days=1)),
    ]
    rules = list(policy.rules) + list(extra)
    rules.insert(min(position, len(rules)), deny)
    verdict = Policy(rules=tuple(rules), default=VerdictKind.ALLOW).evaluate(call, everything_allowed, now=NOW)
    assert verdict.kind is VerdictKind.DENY
    deny_names = {r.name for r in rules if r.verdict is VerdictKind.DENY and r.matches(call)}
    assert verdict.rule in deny_names


@settings(max_examples=100, deadline=None)
@given(policy=policies(), call=calls(), standing=standing_lists())
def test_a_verdict_names_a_rule_that_covers_the_call(
    policy: Policy, call: ToolCall, standing: list[StandingRule]
) -> None:
    verdict = policy.evaluate(call, standing, now=NOW)
    by_name = {r.name: r for r in policy.rules}
    by_id = {s.id: s for s in standing}
    if verdict.rule is None:
        assert verdict.kind is policy.default
        assert not any(r.matches(call) for r in policy.rules)
    elif verdict.rule in by_name:
        assert by_name[verdict.rule].matches(call) and by_name[verdict.rule].verdict is verdict.kind
    else:
        assert by_id[verdict.rule].effect is verdict.kind


BASH_WORDS = ["git", "push", "rm", "-rf", "ls", "npm", "run", "*", "x", ":*"]
COMMAND_WORDS = ["git", "push", "rm", "-rf", "ls", "npm", "run", "x", "&&", ";", "|", "$(id)", "lsof", "sudo", "  "]


def _bash_spec(words: list[str]) -> str:
    spec = " ".join(w for w in words if w != ":*")
    return spec + ":*" if ":*" in words and spec.strip(" *") else spec


@settings(max_examples=300, deadline=None)
@given(
    spec_words=st.lists(st.sampled_from(BASH_WORDS), min_size=1, max_size=4),
    command_words=st.lists(st.sampled_from(COMMAND_WORDS), max_size=6),
)
def test_a_claude_deny_covers_whatever_the_same_allow_covers(spec_words: list[str], command_words: list[str]) -> None:
    spec = _bash_spec(spec_words)
    if not spec.strip(" *") or ":*" in spec[:-2]:
        return
    text = f"Bash({spec})"
    command = " ".join(command_words)
    (allow,) = parse_claude_rule(text, "allow")
    (deny,) = parse_claude_rule(text, "deny")
    tool_call = ToolCall(framework="claude-agent-sdk", tool="Bash", args={"command": command})
    if allow.matches(tool_call):
        assert deny.matches(tool_call), (text, command)


@settings(max_examples=200, deadline=None)
@given(
    spec=st.lists(st.sampled_from(["src", "*", "**", "a.txt", "secrets", "x"]), min_size=1, max_size=3).map("/".join),
    prefix=st.sampled_from(["", "./", "/"]),
    path=st.lists(st.sampled_from(["src", "a.txt", "secrets", "..", ".", "x", ""]), max_size=4).map("/".join),
    absolute=st.booleans(),
)
def test_a_claude_path_deny_covers_whatever_the_same_allow_covers(
    spec: str, prefix: str, path: str, absolute: bool
) -> None:
    text = f"Read({prefix}{spec})"
    args: dict[str, Any] = {"file_path": ("/proj/" if absolute else "") + path}
    tool_call = ToolCall(framework="claude-agent-sdk", tool="Read", args=args)
    for root in (None, "/proj"):
        (allow,) = parse_claude_rule(text, "allow", root=root)
        (deny,) = parse_claude_rule(text, "deny", root=root)
        if allow.matches(tool_call):
            assert deny.matches(tool_call), (text, args, root)

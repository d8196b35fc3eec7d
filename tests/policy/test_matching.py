"""Which calls a policy rule covers: tool globs, every argument condition kind, nested args, agents, frameworks."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from crossgate.errors import ConfigurationError
from crossgate.policy import ArgCondition, MatchKind, Policy, PolicyRule
from crossgate.policy.patterns import normalize_path
from crossgate.policy.rules import ToolRules, lookup_arg, match_text

from .helpers import call

TOOL_GLOBS = [
    ("delete_ticket", "delete_ticket", True),
    ("delete_ticket", "delete_tickets", False),
    ("delete_*", "delete_ticket", True),
    ("delete_*", "undelete_ticket", False),
    ("*delete_ticket", "mcp__tickets__delete_ticket", True),
    ("mcp__tickets__*", "mcp__tickets__delete_ticket", True),
    ("mcp__tickets__*", "mcp__ticketsx__delete_ticket", False),
    ("read_?", "read_a", True),
    ("read_?", "read_ab", False),
    ("Read", "read", False),  # tool names are case-sensitive
    ("*", "anything", True),
]


@pytest.mark.parametrize(("glob", "tool", "expected"), TOOL_GLOBS)
def test_tool_glob(glob: str, tool: str, expected: bool) -> None:
    rule = PolicyRule(name="r", verdict="ask", tool=glob)
    assert rule.matches(call(tool)) is expected


ARGS: dict[str, Any] = {
    "command": "rm -rf /tmp/x",
    "path": "src/app/main.py",
    "count": 3,
    "flag": True,
    "nothing": None,
    "query": "DELETE FROM users WHERE id = 1",
    "target": {"env": "prod", "hosts": ["a.example.com", "b.example.com"], "dir": {"path": "/srv/app"}},
    "dotted.key": "literal",
}

CONDITIONS = [
    # glob: * crosses slashes, whole-text match
    (ArgCondition(arg="command", kind="glob", pattern="rm *"), True),
    (ArgCondition(arg="command", kind="glob", pattern="rm"), False),
    (ArgCondition(arg="command", kind="glob", pattern="*/tmp/*"), True),
    # path: * stays in one segment, ** crosses
    (ArgCondition(arg="path", kind="path", pattern="src/*"), False),
    (ArgCondition(arg="path", kind="path", pattern="src/**"), True),
    (ArgCondition(arg="path", kind="path", pattern="src/*/main.py"), True),
    (ArgCondition(arg="path", kind="path", pattern="**/main.py"), True),
    (ArgCondition(arg="path", kind="path", pattern="./src/**"), True),
    (ArgCondition(arg="path", kind="path", pattern="**/*.txt"), False),
    # regex: searched, anchors respected
    (ArgCondition(arg="query", kind="regex", pattern=r"(?i)\bdelete\b"), True),
    (ArgCondition(arg="query", kind="regex", pattern=r"\Aselect"), False),
    # equals / one_of compare JSON values, not text
    (ArgCondition(arg="count", kind="equals", value=3), True),
    (ArgCondition(arg="count", kind="equals", value=3.0), True),
    (ArgCondition(arg="count", kind="equals", value="3"), False),
    (ArgCondition(arg="flag", kind="equals", value=True), True),
    (ArgCondition(arg="nothing", kind="equals", value=None), True),
    (ArgCondition(arg="target.env", kind="one_of", values=("staging", "prod")), True),
    (ArgCondition(arg="target.env", kind="one_of", values=("staging", "dev")), False),
    # present / absent
    (ArgCondition(arg="nothing", kind="present"), True),
    (ArgCondition(arg="missing", kind="present"), False),
    (ArgCondition(arg="missing", kind="absent"), True),
    (ArgCondition(arg="count", kind="absent"), False),
    # nested: dotted paths through objects and lists; non-strings are matched as canonical JSON
    (ArgCondition(arg="target.dir.path", kind="path", pattern="/srv/**"), True),
    (ArgCondition(arg="target.hosts.1", kind="glob", pattern="b.*"), True),
    (ArgCondition(arg="target.hosts.2", kind="present"), False),
    (ArgCondition(arg="target.hosts", kind="glob", pattern='*"a.example.com"*'), True),
    (ArgCondition(arg="count", kind="glob", pattern="3"), True),
    (ArgCondition(arg="command.sub", kind="present"), False),
    # a key that contains a dot is found as it is
    (ArgCondition(arg="dotted.key", kind="equals", value="literal"), True),
]


@pytest.mark.parametrize(("condition", "expected"), CONDITIONS, ids=lambda v: repr(v)[:70])
def test_condition(condition: ArgCondition, expected: bool) -> None:
    assert condition.matches(ARGS) is expected
    rule = PolicyRule(name="r", verdict="deny", tool="t", where=(condition,))
    assert rule.matches(call("t", args=ARGS)) is expected


def test_all_conditions_must_hold() -> None:
    rule = PolicyRule(
        name="r",
        verdict="deny",
        where=(
            ArgCondition(arg="target.env", kind="equals", value="prod"),
            ArgCondition(arg="command", kind="glob", pattern="rm *"),
        ),
    )
    assert rule.matches(call("t", args=ARGS))
    assert not rule.matches(call("t", args={**ARGS, "command": "ls"}))


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("src/../.env", ".env"),
        ("./a//b/./c", "a/b/c"),
        ("//etc///passwd", "/etc/passwd"),
        ("a/../../x", "../x"),
        ("/a/../../etc", "/etc"),
        (".", ""),
        ("", ""),
    ],
)
def test_paths_are_normalised_before_matching(text: str, normal: str) -> None:
    assert normalize_path(text) == normal


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("src/**", "src/../../etc/passwd", False),  # climbing out of an allowed directory is not inside it
        ("**/.env", "src/../.env", True),
        ("/etc/**", "/tmp/../etc/shadow", True),
        ("/etc/**", "//etc/shadow", True),
        ("secrets/**", "secrets", False),  # gitignore: dir/** is what is inside the directory
        ("build/", "build/out/a.o", True),  # a trailing slash is everything below
        ("build/", "build", False),
    ],
)
def test_path_match_sees_the_normalised_path(pattern: str, text: str, expected: bool) -> None:
    assert match_text(MatchKind.PATH, pattern, text) is expected


@pytest.mark.parametrize(
    ("frameworks", "agents", "framework", "agent", "expected"),
    [
        ((), (), "langgraph", None, True),
        (("langgraph",), (), "langgraph", None, True),
        (("langgraph",), (), "openai-agents", None, False),
        ((), ("support-*",), "langgraph", "support-bot", True),
        ((), ("support-*",), "langgraph", "billing-bot", False),
        ((), ("support-*",), "langgraph", None, False),  # an agent rule never covers a call of unknown agent
        (("claude-agent-sdk", "langgraph"), ("a",), "langgraph", "a", True),
    ],
)
def test_frameworks_and_agents(
    frameworks: tuple[str, ...], agents: tuple[str, ...], framework: str, agent: str | None, expected: bool
) -> None:
    rule = PolicyRule(name="r", verdict="ask", frameworks=frameworks, agents=agents)
    assert rule.matches(call("t", framework=framework, agent=agent)) is expected


def test_lookup_prefers_the_exact_key() -> None:
    assert lookup_arg({"a.b": 1, "a": {"b": 2}}, "a.b") == 1
    assert lookup_arg({"a": {"b": 2}}, "a.b") == 2


@pytest.mark.parametrize(
    "fields",
    [
        {"arg": "x", "kind": "glob"},
        {"arg": "x", "kind": "path"},
        {"arg": "x", "kind": "regex", "pattern": "("},
        {"arg": "x", "kind": "one_of"},
        {"arg": "", "kind": "present"},
        {"arg": "x", "kind": "fuzzy", "pattern": "a"},
    ],
)
def test_malformed_conditions_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ArgCondition.model_validate(fields)


def test_malformed_rules_are_refused() -> None:
    with pytest.raises(ValidationError, match="allowed_decisions cannot be empty"):
        PolicyRule(name="r", verdict="ask", allowed_decisions=())
    with pytest.raises(ValidationError):
        PolicyRule(name="r", verdict="maybe")
    with pytest.raises(ValidationError):
        PolicyRule(name="r", verdict="ask", timeout_seconds=0)


def test_match_text_refuses_a_non_text_kind() -> None:
    with pytest.raises(ConfigurationError):
        match_text(MatchKind.EQUALS, "a", "a")


def test_rules_for_tool_lists_what_may_match_whatever_the_arguments() -> None:
    conditional = PolicyRule(
        name="prod", verdict="deny", tool="run_*", where=({"arg": "env", "kind": "equals", "value": "prod"},)
    )
    ops_only = PolicyRule(name="ops", verdict="ask", tool="run_sql", agents=("ops-*",))
    openai_only = PolicyRule(name="oa", verdict="allow", tool="*", frameworks=("openai-agents",))
    other_tool = PolicyRule(name="read", verdict="allow", tool="read_*")
    policy = Policy(rules=(conditional, ops_only, openai_only, other_tool))

    any_agent = policy.rules_for_tool("run_sql", framework="langchain")
    assert [r.name for r in any_agent.rules] == ["prod", "ops"], "an agent-scoped rule may match an unknown agent"
    assert any_agent.default_reachable, "neither rule covers every call: conditions, or agents not known"

    ops = policy.rules_for_tool("run_sql", framework="langchain", agent="ops-bot")
    assert [r.name for r in ops.rules] == ["prod", "ops"] and not ops.default_reachable
    other = policy.rules_for_tool("run_sql", framework="langchain", agent="support")
    assert [r.name for r in other.rules] == ["prod"] and other.default_reachable

    openai = policy.rules_for_tool("run_sql", framework="openai-agents", agent="support")
    assert [r.name for r in openai.rules] == ["prod", "oa"] and not openai.default_reachable
    assert policy.rules_for_tool("delete_ticket", framework="langchain") == ToolRules(rules=(), default_reachable=True)


def test_context_conditions_match_what_the_call_says_besides_its_arguments() -> None:
    tenant = ({"arg": "tenant", "kind": "equals", "value": "acme"},)
    acme = PolicyRule(name="acme", verdict="ask", tool="*", context=tenant)
    nested = PolicyRule(name="prod", verdict="deny", tool="*", context=({"arg": "env.name", "pattern": "prod*"},))
    assert acme.matches(call("delete_ticket", args={"id": "t1"}, context={"tenant": "acme"}))
    assert not acme.matches(call("delete_ticket", args={"id": "t1"}, context={"tenant": "other"}))
    assert not acme.matches(call("delete_ticket", args={"tenant": "acme"})), "arguments are not the context"
    assert nested.matches(call("x", context={"env": {"name": "prod-eu"}}))
    assert not nested.matches(call("x")), "a missing key never matches"
    found = Policy(rules=(acme,)).rules_for_tool("delete_ticket", framework="langgraph")
    assert found.rules == (acme,) and found.default_reachable, "the condition may not hold: the default may decide"

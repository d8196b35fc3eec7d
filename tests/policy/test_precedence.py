"""Evaluation order: deny beats ask beats allow, standing rules in their place, the default last."""

from __future__ import annotations

from datetime import timedelta

import pytest

from crossgate.fingerprint import fingerprint
from crossgate.model import EDITED_RETRY, DecisionKind, RememberMatch, RememberScope, VerdictKind
from crossgate.policy import ArgCondition, Policy, PolicyRule

from .helpers import NOW, call, standing

DENY = PolicyRule(
    name="deny-rm", verdict="deny", tool="Bash", reason="never rm", where=(ArgCondition(arg="command", pattern="rm *"),)
)
ASK = PolicyRule(
    name="ask-bash", verdict="ask", tool="Bash", allowed_decisions=("approve", "reject"), timeout_seconds=60
)
ALLOW = PolicyRule(name="allow-bash", verdict="allow", tool="Bash")
ALLOW_READS = PolicyRule(name="allow-reads", verdict="allow", tool="read_*")


@pytest.mark.parametrize(
    ("rules", "command", "kind", "rule"),
    [
        ((DENY, ASK, ALLOW), "rm -rf /", "deny", "deny-rm"),
        ((ALLOW, ASK, DENY), "rm -rf /", "deny", "deny-rm"),  # file order does not rank verdicts
        ((ALLOW, ASK, DENY), "ls", "ask", "ask-bash"),
        ((ALLOW, DENY), "ls", "allow", "allow-bash"),
        ((DENY,), "ls", "ask", None),  # no rule covers it: the default
        ((), "ls", "ask", None),
    ],
)
def test_deny_beats_ask_beats_allow(rules: tuple[PolicyRule, ...], command: str, kind: str, rule: str | None) -> None:
    verdict = Policy(rules=rules).evaluate(call("Bash", args={"command": command}), now=NOW)
    assert (verdict.kind, verdict.rule) == (kind, rule)


def test_first_deny_in_file_order_gives_the_reason() -> None:
    other = PolicyRule(name="deny-all-bash", verdict="deny", tool="Bash", reason="no shell")
    verdict = Policy(rules=(other, DENY)).evaluate(call("Bash", args={"command": "rm x"}), now=NOW)
    assert (verdict.rule, verdict.reason) == ("deny-all-bash", "no shell")


def test_a_verdict_carries_the_rules_settings() -> None:
    verdict = Policy(rules=(ASK,)).evaluate(call("Bash", args={"command": "ls"}), now=NOW)
    assert verdict.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT)
    assert verdict.timeout_seconds == 60
    assert "ask-bash" in verdict.reason
    deny = Policy(rules=(DENY,)).evaluate(call("Bash", args={"command": "rm x"}), now=NOW)
    assert deny.reason == "never rm"


@pytest.mark.parametrize("default", ["allow", "ask", "deny"])
def test_configurable_default(default: str) -> None:
    policy = Policy(
        default=default,
        default_reason="house rule",
        default_allowed_decisions=("approve",),
        default_timeout_seconds=30,
    )
    verdict = policy.evaluate(call("anything"), now=NOW)
    assert verdict.kind == default
    assert (verdict.reason, verdict.rule, verdict.timeout_seconds) == ("house rule", None, 30)
    assert verdict.allowed_decisions == (DecisionKind.APPROVE,)


def test_standing_allow_lifts_a_rememberable_ask() -> None:
    rule = standing("s1", tool="Bash")
    verdict = Policy(rules=(ASK,)).evaluate(call("Bash", args={"command": "ls"}), [rule], now=NOW)
    assert (verdict.kind, verdict.rule) == ("allow", "s1")


def test_rememberable_false_keeps_asking() -> None:
    strict = ASK.model_copy(update={"rememberable": False})
    verdict = Policy(rules=(strict,)).evaluate(
        call("Bash", args={"command": "ls"}), [standing("s1", tool="Bash")], now=NOW
    )
    assert (verdict.kind, verdict.rule) == ("ask", "ask-bash")


def test_one_unrememberable_ask_among_several_keeps_asking() -> None:
    strict = PolicyRule(name="strict", verdict="ask", tool="Bash", rememberable=False)
    policy = Policy(rules=(ASK, strict))
    verdict = policy.evaluate(call("Bash", args={"command": "ls"}), [standing("s1", tool="Bash")], now=NOW)
    assert verdict.kind is VerdictKind.ASK


def test_an_edited_retry_lifts_an_unrememberable_ask_for_its_exact_call_only() -> None:
    """The one-shot allow a reviewer's edit leaves (AAP): the reviewer wrote that call, so it runs once."""
    strict = ASK.model_copy(update={"rememberable": False})
    edited = call("Bash", args={"command": "ls -l"})
    retry = standing(
        "s-edit",
        tool="Bash",
        match=RememberMatch.EXACT,
        args_fingerprint=fingerprint("Bash", {"command": "ls -l"}),
        created_by=EDITED_RETRY,
    )
    older = standing("s-old", tool="Bash", age_minutes=60)  # a remembered allow: still no lift
    verdict = Policy(rules=(strict,)).evaluate(edited, [older, retry], now=NOW)
    assert (verdict.kind, verdict.rule) == ("allow", "s-edit")
    other = Policy(rules=(strict,)).evaluate(call("Bash", args={"command": "ls -la"}), [older, retry], now=NOW)
    assert (other.kind, other.rule) == ("ask", "ask-bash")  # any other arguments: asked again
    named_by_anyone = standing("s-forged", tool="Bash", created_by=EDITED_RETRY)  # no exact arguments
    assert Policy(rules=(strict,)).evaluate(edited, [named_by_anyone], now=NOW).kind is VerdictKind.ASK
    deny = PolicyRule(name="deny-ls", verdict="deny", tool="Bash")
    assert Policy(rules=(deny, strict)).evaluate(edited, [retry], now=NOW).kind is VerdictKind.DENY


def test_standing_allow_never_lifts_a_policy_deny() -> None:
    verdict = Policy(rules=(DENY,)).evaluate(
        call("Bash", args={"command": "rm x"}), [standing("s1", tool="*")], now=NOW
    )
    assert (verdict.kind, verdict.rule) == ("deny", "deny-rm")


def test_standing_deny_beats_policy_allow_and_ask() -> None:
    rule = standing("s-deny", "deny", "Bash", message="The reviewer forbade Bash.")
    for policy_rule in (ALLOW, ASK):
        verdict = Policy(rules=(policy_rule,)).evaluate(call("Bash", args={"command": "ls"}), [rule], now=NOW)
        assert (verdict.kind, verdict.rule, verdict.reason) == ("deny", "s-deny", "The reviewer forbade Bash.")


def test_standing_deny_beats_standing_allow() -> None:
    rules = [standing("s-allow", tool="Bash", age_minutes=1), standing("s-deny", "deny", "Bash", age_minutes=50)]
    verdict = Policy().evaluate(call("Bash"), rules, now=NOW)
    assert (verdict.kind, verdict.rule) == ("deny", "s-deny")


def test_policy_allow_wins_over_standing_allow_and_standing_allow_beats_the_default() -> None:
    rules = [standing("s1", tool="read_*")]
    assert Policy(rules=(ALLOW_READS,)).evaluate(call("read_file"), rules, now=NOW).rule == "allow-reads"
    assert Policy().evaluate(call("read_file"), rules, now=NOW).rule == "s1"
    assert Policy(default="deny").evaluate(call("read_file"), rules, now=NOW).kind is VerdictKind.ALLOW


@pytest.mark.parametrize(
    ("fields", "active"),
    [
        ({}, True),
        ({"expires_at": NOW + timedelta(seconds=1)}, True),
        ({"expires_at": NOW}, False),
        ({"expires_at": NOW - timedelta(hours=1)}, False),
        ({"revoked_at": NOW - timedelta(minutes=1), "revoked_by": "ana"}, False),
    ],
)
def test_expired_and_revoked_standing_rules_count_for_nothing(fields: dict[str, object], active: bool) -> None:
    for effect, when_active in (("allow", "allow"), ("deny", "deny")):
        rule = standing("s1", effect, "Bash", **fields)
        verdict = Policy(rules=(ASK,)).evaluate(call("Bash", args={"command": "ls"}), [rule], now=NOW)
        assert verdict.kind == (when_active if active else "ask")


@pytest.mark.parametrize(
    ("scope", "bound", "call_fields", "matches"),
    [
        ("run", {"run": "r1"}, {"run": "r1"}, True),
        ("run", {"run": "r1"}, {"run": "r2"}, False),
        ("run", {"run": "r1"}, {}, False),
        ("run", {}, {"run": "r1"}, False),  # a run rule that names no run covers nothing
        ("session", {"session": "s1"}, {"session": "s1", "run": "r9"}, True),
        ("session", {"session": "s1"}, {"run": "s1"}, True),  # with no session, the run is the session
        ("session", {"session": "s1"}, {"session": "s2"}, False),
        ("session", {}, {"session": "s1"}, False),
        ("forever", {}, {"run": "any"}, True),
        ("once", {}, {}, True),
    ],
)
def test_run_and_session_scoped_standing_rules(
    scope: str, bound: dict[str, str], call_fields: dict[str, str], matches: bool
) -> None:
    rule = standing("s1", tool="Bash", scope=RememberScope(scope), **bound)
    verdict = Policy(rules=(ASK,)).evaluate(call("Bash", args={"command": "ls"}, **call_fields), [rule], now=NOW)
    assert verdict.kind == ("allow" if matches else "ask")


@pytest.mark.parametrize(
    ("fields", "call_fields", "matches"),
    [
        ({"framework": "langgraph"}, {"framework": "langgraph"}, True),
        ({"framework": "langgraph"}, {"framework": "openai-agents"}, False),
        ({"agent": "a1"}, {"agent": "a1"}, True),
        ({"agent": "a1"}, {"agent": "a2"}, False),
        ({"agent": "a1"}, {}, False),
        (
            {"match": RememberMatch.PATTERN, "arg_patterns": {"command": "git *"}},
            {"args": {"command": "git log"}},
            True,
        ),
        ({"match": RememberMatch.PATTERN, "arg_patterns": {"command": "git *"}}, {"args": {"command": "rm x"}}, False),
        ({"match": RememberMatch.PATTERN, "arg_patterns": {"command": "git *"}}, {"args": {}}, False),
    ],
)
def test_standing_rule_bindings(fields: dict[str, object], call_fields: dict[str, object], matches: bool) -> None:
    rule = standing("s1", tool="Bash", **fields)
    defaults: dict[str, object] = {"args": {"command": "ls"}}
    verdict = Policy(rules=(ASK,)).evaluate(call("Bash", **{**defaults, **call_fields}), [rule], now=NOW)  # type: ignore[arg-type]
    assert verdict.kind == ("allow" if matches else "ask")


def test_exact_standing_rule_covers_only_the_fingerprint() -> None:
    approved = call("Bash", args={"command": "ls -la"})
    rule = standing("s1", tool="Bash", match=RememberMatch.EXACT, args_fingerprint=approved.fingerprint)
    policy = Policy(rules=(ASK,))
    assert policy.evaluate(approved, [rule], now=NOW).kind is VerdictKind.ALLOW
    assert policy.evaluate(call("Bash", args={"command": "ls -l"}), [rule], now=NOW).kind is VerdictKind.ASK


def test_the_oldest_matching_standing_rule_is_named_whatever_the_list_order() -> None:
    old, new = standing("s-old", "deny", "Bash", age_minutes=60), standing("s-new", "deny", "Bash", age_minutes=1)
    for order in ([old, new], [new, old]):
        assert Policy().evaluate(call("Bash"), order, now=NOW).rule == "s-old"


def test_duplicate_rule_names_are_refused() -> None:
    with pytest.raises(ValueError, match="repeated: ask-bash"):
        Policy(rules=(ASK, ASK))

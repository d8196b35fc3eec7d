"""The neutral policy: ordered rules, their evaluation, policy files and their check, and imports of SDK-native rule
formats."""

from crossgate.policy.check import Finding, check_policy
from crossgate.policy.claude import import_claude_settings, parse_claude_rule
from crossgate.policy.index import StandingRuleIndex
from crossgate.policy.langchain import import_interrupt_on
from crossgate.policy.loading import load_policy, policy_from_dict, resolve_policy
from crossgate.policy.rules import ArgCondition, MatchKind, Policy, PolicyRule, standing_rule_matches

__all__ = [
    "ArgCondition",
    "Finding",
    "MatchKind",
    "Policy",
    "PolicyRule",
    "StandingRuleIndex",
    "check_policy",
    "import_claude_settings",
    "import_interrupt_on",
    "load_policy",
    "parse_claude_rule",
    "policy_from_dict",
    "resolve_policy",
    "standing_rule_matches",
]

"""The neutral policy: ordered rules, their evaluation, and imports of SDK-native rule formats."""

from crossgate.policy.rules import ArgCondition, MatchKind, Policy, PolicyRule, standing_rule_matches

__all__ = ["ArgCondition", "MatchKind", "Policy", "PolicyRule", "standing_rule_matches"]

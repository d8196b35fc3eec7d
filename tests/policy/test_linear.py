"""Patterns the model's arguments are matched against run in linear time, and patterns that cannot are refused.

On a backtracking engine the two cases below take longer than a minute (doubling per character); the
timeout is a guard against that, not a timing assertion: the figures are in tests/benchmarks/bench_policy.py.
"""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate import MemoryStore, ReviewQueue
from crossgate.errors import ConfigurationError
from crossgate.model import VerdictKind
from crossgate.policy import ArgCondition, MatchKind, Policy, PolicyRule, load_policy
from crossgate.policy.claude import _SPACE
from crossgate.policy.patterns import glob_match, path_match, regex_search

from .helpers import call

REDOS = "(a+)+$"
GLOB_BOMB = "**/a/**/a/**/a/**/a/**/b"


def _policy(kind: MatchKind, pattern: str) -> Policy:
    condition = ArgCondition(arg="x", kind=kind, pattern=pattern)
    return Policy(rules=(PolicyRule(name="hang", verdict=VerdictKind.DENY, tool="t", where=(condition,)),))


@pytest.mark.timeout(10)
def test_a_nested_quantifier_against_a_crafted_argument_is_answered() -> None:
    queue = ReviewQueue(MemoryStore(), _policy(MatchKind.REGEX, REDOS))
    crafted = "a" * 28 + "!"  # no match: a backtracking engine tries 2**28 ways
    assert queue.submit(call("t", args={"x": crafted})).verdict.kind is VerdictKind.ASK
    assert queue.submit(call("t", args={"x": "a" * 28})).verdict.kind is VerdictKind.DENY


@pytest.mark.timeout(10)
def test_a_path_glob_with_many_double_stars_against_a_long_path_is_answered() -> None:
    policy = _policy(MatchKind.PATH, GLOB_BOMB)
    crafted = "a/" * 200  # 400 characters, many ways to split, none ending in b
    assert policy.evaluate(call("t", args={"x": crafted})).kind is VerdictKind.ASK
    assert policy.evaluate(call("t", args={"x": crafted + "b"})).kind is VerdictKind.DENY


@pytest.mark.timeout(10)
def test_a_glob_with_many_stars_against_a_long_text_is_answered() -> None:
    assert not glob_match("*a*a*a*a*a*a*a*b", "a" * 5000)
    assert glob_match("*a*a*a*a*a*a*a*b", "a" * 5000 + "b")


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", "a backreference"),
        (r"(?=rm)", "a lookahead"),
        (r"(?<!no )rm", "a negative lookbehind"),
        (r"(?>a+)b", "an atomic group"),
        (r"a++", "a possessive"),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_refused_on_one_line(
    tmp_path: Path, pattern: str, construct: str
) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text(
        f"rules:\n  - name: r0\n    verdict: allow\n  - name: no-rm\n    verdict: deny\n"
        f"    where: [{{arg: command, regex: '{pattern}'}}]\n"
    )
    with pytest.raises(ConfigurationError) as caught:
        load_policy(file)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{file}: rules[1] (no-rm): where[0]: ")
    assert "'command'" in message and construct in message and "RE2" in message


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (r"\Aab\Z", "ab", True),  # Python's \Z (RE2 spells it \z)
        (r"\Aab\Z", "ab\n", False),
        (r"ab$", "ab\n", True),  # Python's $ matches before a final newline, so a deny still holds
        (r"ab$", "ab\nc", False),
        (r"[$]x", "$x", True),
        (r"\$x", "$x", True),
        (r"(?i)\bdrop\b", "please DROP it", True),
        (r"(?i)\bdrop\b", "dropped", False),
        (r"rm", "x rm y", True),  # searched anywhere
        (r"\Arm", "x rm", False),
    ],
)
def test_regexes_keep_their_python_reading(pattern: str, text: str, expected: bool) -> None:
    assert regex_search(pattern, text) is expected
    assert (re.search(pattern, text) is not None) is expected


_GLOB_CHARS = st.sampled_from(list("ab/*?[]!-.\n\\"))
_TEXT_CHARS = st.sampled_from(list("ab/-.!\n\\[]"))


@settings(max_examples=400, deadline=None)
@given(st.text(_GLOB_CHARS, max_size=8), st.text(_TEXT_CHARS, max_size=8))
def test_a_glob_means_what_fnmatch_means(pattern: str, text: str) -> None:
    assert glob_match(pattern, text) is fnmatchcase(text, pattern)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("**/.env", "a\nb/.env", True),  # no character, not even a newline, lets a path slip past
        ("src/*", "src/a\nb", True),
        ("src/*", "src/a/b", False),
        ("src/**", "src/a/b", True),
    ],
)
def test_path_globs_cross_every_character_but_the_slash_as_documented(pattern: str, text: str, expected: bool) -> None:
    assert path_match(pattern, text) is expected


def test_the_claude_rules_read_whitespace_as_python_does() -> None:
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    others = [chr(c) for c in range(0x3100) if not chr(c).isspace()]
    assert all(regex_search(f"\\A{_SPACE}\\z", s) for s in spaces)
    assert not any(regex_search(f"\\A{_SPACE}\\z", s) for s in others)

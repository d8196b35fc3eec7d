"""Rules that share a tool, filtered by their argument conditions before any pattern runs.

A real policy puts hundreds of rules on one tool (a Claude settings file's ``Bash(git diff:*)`` patterns),
so the tool index (:mod:`crossgate.policy.index`) leaves them all as candidates, and testing each one's
conditions costs an RE2 match per rule. This index picks for each rule one **key** condition that any
matching call must satisfy and that a literal lookup can test:

- a glob or path glob with no wildcard: the argument's text equals it (a dict lookup);
- a glob or path glob with a literal prefix (``git diff*``): the text starts with it; else with a literal
  suffix (``*.env``): the text ends with it;
- ``equals`` and ``one_of``: the argument's canonical JSON is one of the values';
- a regular expression with a literal every match contains (``\\bdrop\\s+table_7\\b`` contains ``table_7``):
  the text contains it (case-folded for a ``(?i)`` pattern whose literal is ASCII).

A call's arguments are looked up once per indexed argument, and only the rules whose key condition holds,
plus the rules with no indexable condition, are tested in full, in their original order. The filter only
drops rules that cannot match (each key condition is necessary for its rule), so evaluation gives exactly
the verdict of the linear scan; a hypothesis test compares the two. No multi-pattern automaton decides
here: RE2's ``Set`` reports a DFA out of memory as "no match", which on a deny rule would let a crafted
argument through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from crossgate.fingerprint import canonical_json
from crossgate.policy.arguments import MISSING, MatchKind, lookup_arg
from crossgate.policy.index import CACHE_LIMIT, ToolIndex, literal_prefix, literal_suffix
from crossgate.policy.patterns import GLOB_CHARS, normalize_path

if TYPE_CHECKING:
    from crossgate.model import ToolCall
    from crossgate.policy.rules import ArgCondition, PolicyRule

MIN_RULES = 8
"""Below this many candidates, testing every rule costs less than looking up its key."""

_PATH_WILDCARDS = frozenset("*?")  # a path glob reads "[" literally
_REGEX_META = frozenset("\\.^$|?*+()[]{}")
_QUANTIFIERS = frozenset("?*{")  # a character followed by one of these may be absent


class _TextKeys:
    """Key conditions on one argument's text (raw for globs and regexes, normalised for path globs)."""

    __slots__ = ("contains", "contains_folded", "exact", "prefix_lengths", "prefixed", "suffix_lengths", "suffixed")

    def __init__(self) -> None:
        self.exact: dict[str, list[int]] = {}
        self.prefixed: dict[str, list[int]] = {}
        self.suffixed: dict[str, list[int]] = {}
        self.contains = _Literals()
        self.contains_folded = _Literals()
        self.prefix_lengths: tuple[int, ...] = ()
        self.suffix_lengths: tuple[int, ...] = ()

    def seal(self) -> None:
        self.contains.seal()
        self.contains_folded.seal()
        self.prefix_lengths = tuple(sorted({len(k) for k in self.prefixed}))
        self.suffix_lengths = tuple(sorted({len(k) for k in self.suffixed}))

    def __bool__(self) -> bool:
        return bool(self.exact or self.prefixed or self.suffixed or self.contains or self.contains_folded)

    def positions(self, text: str, found: list[int]) -> None:
        found += self.exact.get(text, ())
        size = len(text)
        for length in self.prefix_lengths:
            if length > size:
                break
            found += self.prefixed.get(text[:length], ())
        for length in self.suffix_lengths:
            if length > size:
                break
            found += self.suffixed.get(text[size - length :], ())
        if self.contains:
            self.contains.positions(text, found)
        if self.contains_folded:
            self.contains_folded.positions(text.casefold(), found)


class _Literals:
    """Literals a text must contain, found by the text's trigrams when that is cheaper than a search each."""

    __slots__ = ("_all", "_by_gram", "_short")

    GRAM = 3

    def __init__(self) -> None:
        self._all: list[tuple[str, int]] = []
        self._short: list[tuple[str, int]] = []  # shorter than a trigram: searched every time
        self._by_gram: dict[str, list[tuple[str, int]]] = {}

    def __bool__(self) -> bool:
        return bool(self._all)

    def add(self, literal: str, position: int) -> None:
        self._all.append((literal, position))

    def seal(self) -> None:
        for literal, position in self._all:
            if len(literal) < self.GRAM:
                self._short.append((literal, position))
            else:
                self._by_gram.setdefault(literal[: self.GRAM], []).append((literal, position))

    def positions(self, text: str, found: list[int]) -> None:
        # A literal is in the text only where the text has the literal's first trigram: one dict lookup per
        # trigram of a short text beats one search per literal; a long text is searched for each literal.
        if len(text) > 4 * len(self._all) + 64:
            found += [p for literal, p in self._all if literal in text]
            return
        found += [p for literal, p in self._short if literal in text]
        grams = self._by_gram
        for start in {text[i : i + self.GRAM] for i in range(len(text) - self.GRAM + 1)}.intersection(grams):
            found += [p for literal, p in grams[start] if literal in text]


class _ArgKeys:
    """Every key condition on one argument path."""

    __slots__ = ("path", "text", "values")

    def __init__(self) -> None:
        self.text = _TextKeys()
        self.path = _TextKeys()
        self.values: dict[str, list[int]] = {}  # canonical JSON of equals / one_of values

    def positions(self, value: Any, found: list[int]) -> None:
        if value is MISSING:
            return  # every key condition fails on a missing argument
        if self.values:
            found += self.values.get(canonical_json(value), ())
        text = value if isinstance(value, str) else canonical_json(value)
        if self.text:
            self.text.positions(text, found)
        if self.path:
            self.path.positions(normalize_path(text), found)


class ArgumentIndex:
    """The rules of one tool's candidates, found by their key argument conditions (see the module docstring)."""

    __slots__ = ("_always", "_args", "_rules")

    def __init__(self, rules: Sequence[PolicyRule]) -> None:
        self._rules = tuple(rules)
        self._args: dict[str, _ArgKeys] = {}
        self._always: list[int] = []
        for position, rule in enumerate(self._rules):
            if not any(self._add(condition, position) for condition in _by_selectivity(rule.where)):
                self._always.append(position)
        for keys in self._args.values():
            keys.text.seal()
            keys.path.seal()

    def candidates(self, call: ToolCall) -> list[PolicyRule]:
        """The rules that may match ``call``, in their original order; every other rule cannot."""
        found = list(self._always)
        for path, keys in self._args.items():
            keys.positions(lookup_arg(call.args, path), found)
        return [self._rules[p] for p in sorted(set(found))]

    def _add(self, condition: ArgCondition, position: int) -> bool:
        """Index ``condition`` as rule ``position``'s key; False when no literal lookup can test it."""
        kind, pattern = condition.kind, condition.pattern
        if kind is MatchKind.EQUALS or kind is MatchKind.ONE_OF:
            values = self._keys(condition.arg).values
            alternatives = condition.values if kind is MatchKind.ONE_OF else (condition.value,)
            for value in {canonical_json(v) for v in alternatives}:
                values.setdefault(value, []).append(position)
            return True
        if pattern is None:
            return False
        if kind is MatchKind.GLOB:
            return _add_glob(self._keys, condition.arg, "text", pattern, GLOB_CHARS, position)
        if kind is MatchKind.PATH:
            return _add_glob(self._keys, condition.arg, "path", _path_pattern(pattern), _PATH_WILDCARDS, position)
        literal, folded = required_literal(pattern)
        if not literal:
            return False
        keys = self._keys(condition.arg).text
        (keys.contains_folded if folded else keys.contains).add(literal, position)
        return True

    def _keys(self, arg: str) -> _ArgKeys:
        return self._args.setdefault(arg, _ArgKeys())


class PolicyRuleIndex:
    """A policy's rules by tool (:class:`~crossgate.policy.index.ToolIndex`), then by argument for shared tools."""

    __slots__ = ("_by_tool", "tools")

    def __init__(self, rules: Sequence[PolicyRule]) -> None:
        self.tools: ToolIndex[PolicyRule] = ToolIndex(rules)
        self._by_tool: dict[str, ArgumentIndex | tuple[PolicyRule, ...]] = {}

    def candidates(self, call: ToolCall) -> Sequence[PolicyRule]:
        """The rules that may match ``call``, in file order; every rule left out cannot match it."""
        found = self._by_tool.get(call.tool)
        if found is None:
            rules = self.tools.candidates(call.tool)
            found = ArgumentIndex(rules) if len(rules) >= MIN_RULES else rules
            if len(self._by_tool) >= CACHE_LIMIT:
                self._by_tool.clear()
            self._by_tool[call.tool] = found
        return found.candidates(call) if isinstance(found, ArgumentIndex) else found


def _by_selectivity(conditions: Sequence[ArgCondition]) -> list[ArgCondition]:
    """Conditions in the order a key is best taken from: value lookups, globs, paths, then regexes."""
    rank = {MatchKind.EQUALS: 0, MatchKind.ONE_OF: 1, MatchKind.GLOB: 2, MatchKind.PATH: 3, MatchKind.REGEX: 4}
    return sorted((c for c in conditions if c.kind in rank), key=lambda c: rank[c.kind])


def _add_glob(
    keys_of: Callable[[str], _ArgKeys], arg: str, side: str, pattern: str, wildcards: frozenset[str], position: int
) -> bool:
    if wildcards is GLOB_CHARS:
        prefix, suffix = literal_prefix(pattern), literal_suffix(pattern)
    else:
        cut = min((pattern.index(c) for c in wildcards if c in pattern), default=len(pattern))
        last = max((pattern.rindex(c) for c in wildcards if c in pattern), default=-1)
        if pattern.startswith("**/", last - 1):  # "**/" may match nothing, its slash included
            last += 1
        prefix, suffix = pattern[:cut], pattern[last + 1 :]
    if not prefix and not suffix:
        return False
    keys: _TextKeys = getattr(keys_of(arg), side)
    if not wildcards.intersection(pattern):
        keys.exact.setdefault(pattern, []).append(position)
    elif prefix:
        keys.prefixed.setdefault(prefix, []).append(position)
    else:
        keys.suffixed.setdefault(suffix, []).append(position)
    return True


def _path_pattern(pattern: str) -> str:
    """The path glob as ``path_regex`` reads it: leading ``./`` dropped, a trailing ``/`` meaning ``/**``."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern + "**" if pattern.endswith("/") else pattern


def required_literal(pattern: str) -> tuple[str, bool]:
    """A literal every match of the regex ``pattern`` contains, and whether to compare it case-folded.

    Conservative: ``("", False)`` whenever the pattern has an alternation, inline flags other than a leading
    ``(?i)``, or no literal run outside groups and classes. A run ends at any metacharacter, and a character
    a quantifier makes optional is dropped from it.
    """
    folded = False
    if pattern.startswith("(?i)"):
        pattern, folded = pattern[4:], True
    if "|" in pattern or "(?" in pattern:
        return "", False
    runs: list[str] = []
    current: list[str] = []
    depth, i = 0, 0
    while i < len(pattern):
        char = pattern[i]
        step, literal = 1, None
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            step = 2 if not escaped.isalnum() else _escape_length(pattern, i)
            literal = escaped if not escaped.isalnum() else None  # \. is a dot; \s, \b, \x41, \pL are not
        elif char == "[":
            step = _class_length(pattern, i)
        elif char == "{":  # a counted repetition: its digits are not literals
            end = pattern.find("}", i)
            step = end - i + 1 if end > 0 else 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char not in _REGEX_META:
            literal = char
        following = pattern[i + step] if i + step < len(pattern) else ""
        if literal is not None and depth == 0 and following not in _QUANTIFIERS:
            current.append(literal)  # a "+" after it is a metacharacter, so it still ends the run
        else:
            runs.append("".join(current))
            current = []
        i += step
    runs.append("".join(current))
    best = max(runs, key=len)
    if folded and not (best.isascii() and best.isprintable()):
        return "", False
    return (best.casefold(), True) if folded else (best, False)


def _escape_length(pattern: str, start: int) -> int:
    """Length of the escape at ``start`` whose letter or digit follows the backslash (``\\x{263a}``, ``\\012``)."""
    letter, j = pattern[start + 1], start + 2
    if letter in "xpP":
        if j < len(pattern) and pattern[j] == "{":
            end = pattern.find("}", j)
            return (end if end > 0 else len(pattern) - 1) - start + 1
        return 2 + (2 if letter == "x" else 1)
    while letter.isdigit() and j < len(pattern) and pattern[j].isdigit() and j - start < 4:
        j += 1
    return j - start


def _class_length(pattern: str, start: int) -> int:
    j = start + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return min(j, len(pattern) - 1) - start + 1

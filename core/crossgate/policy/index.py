"""Rules indexed by tool name, so evaluating a call tests only the rules that can match its tool.

Evaluation must give exactly the verdict of a scan over every rule in order (a hypothesis test compares
the two), so the index only ever drops rules whose tool glob cannot match, and hands back the candidates
in their original order (file order for policy rules, oldest first for standing rules):

- a tool pattern without ``*``, ``?`` or ``[`` is a name: found by a dict lookup;
- ``*`` (any run of stars) matches every tool: always a candidate;
- any other glob is grouped by its literal prefix (``delete_*`` under ``delete_``), or if it has none by its
  literal suffix (``*_ticket`` under ``_ticket``), and only the groups whose prefix starts the tool name, or
  whose suffix ends it, are tested; a glob with neither (``*ticket*``) is tested for every new tool name.

The candidates for one tool name are cached (up to :data:`CACHE_LIMIT` names, then the cache starts over),
so a policy of 1,000 rules costs a dict lookup plus the few candidates' conditions per call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, Protocol, TypeVar

from crossgate.model import StandingRule
from crossgate.policy.patterns import GLOB_CHARS, glob_match

CACHE_LIMIT = 4096
"""Tool names whose candidates an index keeps; tool names come from the SDK's tools, so few are seen."""


class _HasTool(Protocol):
    @property
    def tool(self) -> str: ...


T = TypeVar("T", bound=_HasTool)


class ToolIndex(Generic[T]):
    """Items with a ``tool`` glob, looked up by tool name; candidates keep the items' order."""

    __slots__ = (
        "_always",
        "_cache",
        "_exact",
        "_items",
        "_prefix_lengths",
        "_prefixed",
        "_suffix_lengths",
        "_suffixed",
    )

    def __init__(self, items: Sequence[T]) -> None:
        self._items = tuple(items)
        self._exact: dict[str, list[int]] = {}
        self._prefixed: dict[str, list[int]] = {}
        self._suffixed: dict[str, list[int]] = {}  # by a non-empty literal suffix, for globs with no prefix
        self._always: list[int] = []
        for position, item in enumerate(self._items):
            pattern = item.tool
            if not GLOB_CHARS.intersection(pattern):
                self._exact.setdefault(pattern, []).append(position)
            elif not pattern.strip("*"):
                self._always.append(position)
            elif literal_prefix(pattern) or not literal_suffix(pattern):
                self._prefixed.setdefault(literal_prefix(pattern), []).append(position)
            else:
                self._suffixed.setdefault(literal_suffix(pattern), []).append(position)
        self._prefix_lengths = sorted({len(prefix) for prefix in self._prefixed})
        self._suffix_lengths = sorted({len(suffix) for suffix in self._suffixed})
        self._cache: dict[str, tuple[T, ...]] = {}

    @property
    def items(self) -> tuple[T, ...]:
        """Every item, in the order given."""
        return self._items

    def candidates(self, tool: str) -> tuple[T, ...]:
        """The items whose tool glob matches ``tool``, in the order given."""
        found = self._cache.get(tool)
        if found is None:
            found = tuple(self._items[p] for p in sorted(self._positions(tool)))
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[tool] = found
        return found

    def _positions(self, tool: str) -> list[int]:
        positions = [*self._exact.get(tool, ()), *self._always]
        for length in self._prefix_lengths:
            if length > len(tool):
                break
            positions += self._matching(self._prefixed.get(tool[:length], ()), tool)
        for length in self._suffix_lengths:
            if length > len(tool):
                break
            positions += self._matching(self._suffixed.get(tool[len(tool) - length :], ()), tool)
        return positions

    def _matching(self, positions: list[int] | tuple[()], tool: str) -> list[int]:
        return [p for p in positions if glob_match(self._items[p].tool, tool)]


def literal_prefix(glob: str) -> str:
    """The text before the first ``*``, ``?`` or ``[`` of ``glob``: every name it matches starts with it."""
    cut = min((glob.index(c) for c in GLOB_CHARS if c in glob), default=len(glob))
    return glob[:cut]


def literal_suffix(glob: str) -> str:
    """The text after the last ``*``, ``?`` or ``]`` of ``glob`` (empty when a set or wildcard ends it)."""
    cut = max((glob.rindex(c) for c in "*?]" if c in glob), default=-1)
    return glob[cut + 1 :]


class StandingRuleIndex(ToolIndex[StandingRule]):
    """Standing rules oldest first (then by id), indexed by tool: what the policy consults for a call.

    The queue builds one each time the standing rules change and passes it on every evaluation; any other
    iterable of standing rules is indexed on the spot.
    """

    __slots__ = ()

    def __init__(self, rules: Iterable[StandingRule]) -> None:
        super().__init__(sorted(rules, key=lambda s: (s.created_at, s.id)))

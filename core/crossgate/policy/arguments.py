"""How a rule reads a call's arguments: the kinds of condition, the argument at a path, and its text."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from crossgate.fingerprint import canonical_json

MISSING: Any = object()
"""What :func:`lookup_arg` returns for an argument the call does not have."""


class MatchKind(StrEnum):
    """How an argument condition compares the argument."""

    GLOB = "glob"
    """``*`` matches any text (slashes too), ``?`` one character: for commands and names."""
    PATH = "path"
    """gitignore-style: ``*`` stays within one path segment, ``**`` crosses segments.

    The argument is normalised first (``.``, ``..`` and repeated ``/`` resolved, so ``src/../.env`` is ``.env``);
    a leading ``./`` in the pattern is dropped and a trailing ``/`` means everything below (``dir/`` is ``dir/**``)."""
    REGEX = "regex"
    """Regular expression, searched anywhere in the text unless anchored; run by RE2, in linear time, so
    backreferences and lookaround are refused (see :mod:`crossgate.policy.patterns`)."""
    EQUALS = "equals"
    ONE_OF = "one_of"
    PRESENT = "present"
    ABSENT = "absent"


def lookup_arg(args: dict[str, Any], path: str) -> Any:
    """The argument at ``path`` (exact key first, then dotted path), or :data:`MISSING`."""
    if path in args:
        return args[path]
    current: Any = args
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def as_text(value: Any) -> str:
    """Strings as they are, anything else as canonical JSON, so patterns see one stable text."""
    return value if isinstance(value, str) else canonical_json(value)

"""Text patterns in policy rules (globs, path globs, regular expressions), matched in linear time.

The model writes the arguments a pattern is matched against, so no pattern may take more than linear time
in the text: a backtracking engine lets a crafted argument (``aaaa…b`` against ``(a+)+$``) stall the gate.
Every pattern is therefore compiled for RE2, which guarantees linear time and refuses what it cannot run
that way (backreferences, lookaround, atomic groups, possessive quantifiers), so such a pattern is refused
when the policy loads, not when a call arrives.

- A **glob** keeps ``fnmatch``'s meaning (case-sensitive; ``*`` any text including ``/`` and newlines,
  ``?`` one character, ``[...]`` and ``[!...]`` sets) and must match the whole text.
- A **path glob** is gitignore-style (``*`` within a segment, ``**`` across) and matches the normalised path.
- A **regex** is searched anywhere in the text. It is read as Python would read it where RE2 differs in
  spelling: ``\\Z`` is the end of the text, and ``$`` (outside a set) also matches before a final newline.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache
from typing import Any

import re2
from re2 import _re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would write every refused pattern to stderr as well
_OPTIONS.never_capture = True  # only whether it matches counts
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH

# What RE2 says about a construct only backtracking engines can run, and how a policy author knows it.
_UNSUPPORTED = (
    ("invalid escape sequence: \\1", "a backreference"),
    ("invalid escape sequence: \\2", "a backreference"),
    ("(?=", "a lookahead"),
    ("(?!", "a negative lookahead"),
    ("(?<=", "a lookbehind"),
    ("(?<!", "a negative lookbehind"),
    ("(?>", "an atomic group"),
    ("(?P=", "a backreference"),
    ("bad repetition operator", "a possessive or repeated quantifier"),
)

GLOB_CHARS = frozenset("*?[")
"""Characters that make a glob more than its literal text."""


class PatternError(ValueError):
    """A pattern the linear-time engine cannot run; the message is one line naming the construct."""


class Compiled:
    """An RE2 expression that answers only whether it matches (no match object: a third of the cost)."""

    __slots__ = ("_regexp",)

    def __init__(self, expression: str) -> None:
        # The module's Match wrapper builds match objects and decodes offsets; the RE2 object under it
        # answers the same question directly (and, unlike RE2::Set, falls back to the NFA rather than fail).
        self._regexp = compile_re2(expression)._regexp

    def search(self, text: str) -> bool:
        """True if the expression matches somewhere in ``text``."""
        data = text.encode("utf-8", "surrogatepass")
        return bool(self._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] >= 0)

    def fullmatch(self, text: str) -> bool:
        """True if the expression matches all of ``text``."""
        data = text.encode("utf-8", "surrogatepass")
        return bool(self._regexp.Match(_BOTH, data, 0, len(data))[0][0] >= 0)


def compile_re2(pattern: str) -> Any:
    """``pattern`` (RE2 syntax) compiled, or ``PatternError`` saying what RE2 refused."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        construct = next((name for text, name in _UNSUPPORTED if text in detail), None)
        if construct is None:
            raise PatternError(f"{detail} (policy patterns run on RE2, in linear time)") from None
        raise PatternError(
            f"{detail}: {construct}, which the linear-time engine (RE2) cannot run; rewrite it without one"
        ) from None


def check_regex(pattern: str) -> None:
    """Raise ``PatternError`` unless ``pattern`` can be searched in linear time."""
    _regex(pattern)


def check_glob(pattern: str, *, path: bool = False) -> None:
    """Compile the glob (or path glob) now, so the first call it meets does not pay for it; raise ``PatternError``."""
    if path:
        _path(pattern)
    elif GLOB_CHARS.intersection(pattern):
        _glob(pattern)


def regex_search(pattern: str, text: str) -> bool:
    """True if the regular expression ``pattern`` matches somewhere in ``text``."""
    return _regex(pattern).search(text)


def glob_match(pattern: str, text: str) -> bool:
    """True if ``text`` matches the glob as a whole (``fnmatchcase``'s meaning, in linear time)."""
    if "*" not in pattern and "?" not in pattern and "[" not in pattern:  # a name: the common case, kept cheap
        return text == pattern
    return _glob(pattern).fullmatch(text)


def path_match(pattern: str, text: str) -> bool:
    """True if the normalised ``text`` matches the gitignore-style path glob ``pattern``."""
    return _path(pattern).fullmatch(normalize_path(text))


def normalize_path(text: str) -> str:
    """``text`` with ``.``, ``..`` and repeated slashes resolved, so no spelling of a path slips past a pattern."""
    if not text:
        return text
    normal = posixpath.normpath(text)
    if normal.startswith("//"):  # POSIX keeps a leading "//"; for matching it is the root like "/"
        normal = "/" + normal.lstrip("/")
    return "" if normal == "." else normal


def glob_regex(pattern: str) -> str:
    """The RE2 expression (without anchors) for the glob ``pattern``; ``fnmatch.translate``'s meaning."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        i += 1
        if char == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = _set_end(pattern, i)
            if end < 0:
                out.append(_literal("["))
            else:
                out.append(_set(pattern[i:end]))
                i = end + 1
        else:
            out.append(_literal(char))
    return "(?s:" + "".join(out) + ")"


def path_regex(pattern: str) -> str:
    """The RE2 expression (without anchors) for the gitignore-style path glob ``pattern``."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):  # gitignore: "build/" is the directory, so everything below it
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(_literal(pattern[i]))
            i += 1
    return "(?s:" + "".join(out) + ")"


def python_regex_as_re2(pattern: str) -> str:
    """``pattern`` with the Python spellings RE2 reads differently rewritten: ``\\Z`` and a bare ``$``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            out.append("\\z" if pattern[i + 1] == "Z" else pattern[i : i + 2])
            i += 2
        elif char == "[":
            end = _class_end(pattern, i + 1)
            out.append(pattern[i : end + 1])
            i = end + 1
        elif char == "$":
            out.append("(?:$|\n\\z)")  # Python's $ also matches just before a final newline
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> Compiled:
    return Compiled(python_regex_as_re2(pattern))


@lru_cache(maxsize=4096)
def _glob(pattern: str) -> Compiled:
    return Compiled(glob_regex(pattern))


@lru_cache(maxsize=4096)
def _path(pattern: str) -> Compiled:
    return Compiled(path_regex(pattern))


def _literal(char: str) -> str:
    return char if (char.isascii() and char.isalnum()) or char == "_" else f"\\x{{{ord(char):x}}}"


def _set_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing a glob set that opened before ``start``, or -1 (then ``[`` is literal)."""
    j = start
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def _set(body: str) -> str:
    """A glob set's body (between the brackets) as an RE2 class; ``fnmatch`` drops empty ranges."""
    negate = body.startswith("!")
    items = body[1:] if negate else body
    parts: list[str] = []
    k = 0
    while k < len(items):
        if k + 2 < len(items) and items[k + 1] == "-":
            low, high = items[k], items[k + 2]
            if low <= high:
                parts.append(f"{_literal(low)}-{_literal(high)}")
            k += 3
        else:
            parts.append(_literal(items[k]))
            k += 1
    if not parts:
        return "." if negate else "[^\\x00-\\x{10ffff}]"  # an empty set matches nothing; negated, anything
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing a regex class whose body starts at ``start`` (the end if unclosed)."""
    j = start
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return min(j, len(pattern) - 1)

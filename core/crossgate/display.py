"""Text as a reviewer must see it, on any channel (terminal, web page, chat message).

Tool names and arguments come from a model. A terminal escape sequence, a right-to-left override
(U+202E), a zero-width or blank-looking character in them, or a Cyrillic letter inside a Latin word,
could change or hide what the reviewer reads. So every channel that shows them to a person writes
hidden characters as escapes (``\\u202e``, :func:`visible`) and warns about look-alikes
(:func:`suspicious`). Channels for machines (JSON bodies, the API) carry the exact values.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crossgate.model import ToolCall

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories shown as escapes: controls, invisible formatting, lone surrogates (which no terminal
can even be sent), line and paragraph separators."""
_BLANK = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0000-\U000e0fff\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]"
)
"""Characters that show as nothing or as a plain space but are neither: Unicode's default-ignorable
characters outside the categories above (the combining grapheme joiner U+034F, the Hangul fillers
U+115F, U+1160, U+3164 and U+FFA0, Khmer and Mongolian inherent vowels and selectors, the variation
selectors U+FE00–U+FE0F and U+E0100–U+E01EF, the tag block), the braille blank U+2800, and every
space other than U+0020 (no-break U+00A0, figure U+2007, narrow no-break U+202F, ideographic U+3000…)."""
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})
"""Scripts whose letters look like one another's: a word mixing two of them is flagged."""
_WORD = re.compile(r"\w+")
MAX_FINDINGS = 5
"""The most findings :func:`suspicious` lists one by one; the rest are counted."""


def visible(text: str) -> str:
    """``text`` with control, invisible and blank-looking characters written as escapes.

    Arguments come from a model: a terminal escape sequence, a right-to-left override or a Hangul
    filler in them must not change or hide what the reviewer reads.
    """
    if text.isprintable() and (text.isascii() or not _BLANK.search(text)):
        return text
    return "".join(_escape(ch) if _is_hidden(ch) else ch for ch in text)


def visible_parts(text: str) -> list[tuple[str, str | None]]:
    """``text`` cut into runs for a channel that marks hidden characters (a web page's ``<mark>``).

    Each run is ``(shown, code)``: plain text with ``code`` None, or one hidden character's escape with its
    code point (``("\\u3164", "U+3164")``). Joined, the shown parts are :func:`visible` of ``text``.
    """
    parts: list[tuple[str, str | None]] = []
    plain: list[str] = []
    for ch in text:
        if _is_hidden(ch):
            if plain:
                parts.append(("".join(plain), None))
                plain = []
            parts.append((_escape(ch), _code(ch)))
        else:
            plain.append(ch)
    if plain:
        parts.append(("".join(plain), None))
    return parts


def visible_lines(text: str) -> str:
    """:func:`visible`, line by line: line feeds stay line breaks (pretty-printed JSON, a message on a page)."""
    return "\n".join(visible(line) for line in text.split("\n"))


def suspicious(text: str) -> list[str]:
    """What in ``text`` may hide or imitate other text, one finding per entry, safe to show as is.

    Findings: each distinct hidden character (those :func:`visible` escapes, tab and line breaks
    aside), each word that mixes letters of look-alike scripts (``'pаypal'`` with a Cyrillic а), and
    each letter that imitates a plain one (fullwidth ``ｐ``, mathematical ``𝐩``). Empty for plain text.
    At most ``MAX_FINDINGS``, then a count of the rest.
    """
    if text.isascii() and text.isprintable():
        return []
    findings = _hidden_findings(text) + _look_alike_findings(text)
    if len(findings) > MAX_FINDINGS:
        rest = len(findings) - MAX_FINDINGS
        findings = [*findings[:MAX_FINDINGS], f"and {rest} more"]
    return findings


def suspicious_call(call: ToolCall) -> list[str]:
    """:func:`suspicious` over what a reviewer reads of a call: its tool, arguments, agent, run and session."""
    shown = (call.tool, json.dumps(call.args, ensure_ascii=False), call.agent, call.run, call.session)
    return suspicious("\n".join(text for text in shown if text))


def warning_text(findings: list[str]) -> str:
    """One line for people about ``findings`` (from :func:`suspicious`)."""
    return "hidden or look-alike characters: " + "; ".join(findings)


def _hidden_findings(text: str) -> list[str]:
    seen = dict.fromkeys(ch for ch in text if ch not in "\t\n\r" and _is_hidden(ch))
    return [f"{_code(ch)} {_name(ch)} ({_looks(ch)})" for ch in seen]


def _looks(ch: str) -> str:
    return "looks like a space" if unicodedata.category(ch) == "Zs" else "invisible"


def _look_alike_findings(text: str) -> list[str]:
    findings: list[str] = []
    for word in dict.fromkeys(_WORD.findall(text)):
        if word.isascii():
            continue
        scripts: dict[str, str] = {}
        for ch in word:
            script = unicodedata.name(ch, "").partition(" ")[0]
            if script in _CONFUSABLE_SCRIPTS:
                scripts.setdefault(script, ch)
            elif ch.isalpha() and (plain := unicodedata.normalize("NFKC", ch)).isascii() and plain.isalnum():
                findings.append(f"'{visible(word)}' has {ch} ({_code(ch)} {_name(ch)}), like {plain}")
        if len(scripts) > 1:
            names = " and ".join(s.title() for s in scripts)
            odd = ", ".join(f"{ch} {_code(ch)}" for script, ch in scripts.items() if script != "LATIN")
            findings.append(f"'{visible(word)}' mixes {names} letters ({odd})")
    return findings


def _name(ch: str) -> str:
    return unicodedata.name(ch, "CONTROL CHARACTER" if unicodedata.category(ch) == "Cc" else "UNNAMED CHARACTER")


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _escape(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


def _is_hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN or _BLANK.match(ch) is not None

"""Text as a reviewer must see it, on any channel (terminal, web page, chat message).

Tool names and arguments come from a model. A terminal escape sequence, a right-to-left override
(U+202E) or a zero-width character in them could change or hide what the reviewer reads, so every
channel that shows them to a person writes such characters as escapes (``\\u202e``). Channels for
machines (JSON bodies, the API) carry the exact values.
"""

from __future__ import annotations

import unicodedata

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories shown as escapes: controls, invisible formatting, lone surrogates (which no terminal
can even be sent), line and paragraph separators."""


def visible(text: str) -> str:
    """``text`` with control and invisible formatting characters written as escapes.

    Arguments come from a model: a terminal escape sequence or a right-to-left override in them must
    not change what the reviewer reads.
    """
    if text.isprintable():
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _is_hidden(ch) else ch for ch in text)


def visible_lines(text: str) -> str:
    """:func:`visible`, line by line: line feeds stay line breaks (pretty-printed JSON, a message on a page)."""
    return "\n".join(visible(line) for line in text.split("\n"))


def _is_hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN

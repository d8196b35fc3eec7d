"""Characters that hide or imitate what a call does, one per class, as the CLI and webhook tests use them."""

from __future__ import annotations

HIDING = {
    # class: (text, how a person sees it (None: as is), what the warning names)
    "hangul filler": ("pay\u3164pal", "pay\\u3164pal", "U+3164 HANGUL FILLER (invisible)"),
    "braille blank": ("rm\u2800-rf", "rm\\u2800-rf", "U+2800 BRAILLE PATTERN BLANK"),
    "combining grapheme joiner": ("ad\u034fmin", "ad\\u034fmin", "U+034F COMBINING GRAPHEME JOINER"),
    "variation selector": ("ok\ufe0f", "ok\\ufe0f", "U+FE0F VARIATION SELECTOR-16"),
    "variation selector supplement": ("ok\U000e0100", "ok\\U000e0100", "U+E0100 VARIATION SELECTOR-17"),
    "no-break space": ("a\u00a0b", "a\\xa0b", "U+00A0 NO-BREAK SPACE (looks like a space)"),
    "figure space": ("1\u20070", "1\\u20070", "U+2007 FIGURE SPACE (looks like a space)"),
    "narrow no-break space": ("a\u202fb", "a\\u202fb", "U+202F NARROW NO-BREAK SPACE"),
    "cyrillic in a latin word": ("p\u0430ypal", None, "'p\u0430ypal' mixes Latin and Cyrillic letters (\u0430 U+0430)"),
    "greek in a latin word": ("p\u03b1ypal", None, "'p\u03b1ypal' mixes Latin and Greek letters (\u03b1 U+03B1)"),
    "fullwidth latin": ("\uff50aypal", None, "has \uff50 (U+FF50 FULLWIDTH LATIN SMALL LETTER P), like p"),
}
PLAIN = ("café", "日本語のテキスト", "Ελληνικά", "Привет мир", "naïve 😀", "tab\tand\nline")
"""Text that is what it looks like: no warning."""

"""How much crossgate accepts from outside: integer ranges, JSON shape, and the sizes of what a person or a
model sends.

Every value here bounds input that reaches the store: the store's integers are signed 64-bit, JSON is
nested at most ``MAX_JSON_DEPTH`` levels with numbers of at most ``MAX_NUMBER_DIGITS`` digits, and the
sizes in :class:`InputLimits` (measured in UTF-8 bytes) keep one request, one decision or one note from
filling the database. Input beyond them is refused with a clear message before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossgate.errors import ConfigurationError

MAX_INT64 = 2**63 - 1
"""The largest sequence number, limit or count the stores hold (SQLite and PostgreSQL ``bigint``)."""
MAX_JSON_DEPTH = 64
"""How deeply JSON arguments may nest: an object or array inside another counts one level more."""
ENVELOPE_DEPTH = 8
"""Levels crossgate's own records and bodies may add around arguments (an event's payload, a batch's item):
canonical JSON, and a request body, may nest ``MAX_JSON_DEPTH + ENVELOPE_DEPTH`` levels."""
MAX_NUMBER_DIGITS = 100
"""The most digits a JSON number may have (an integer's, or a decimal's before its exponent)."""
KIB = 1024
MIB = 1024 * KIB


def check_int64(value: int, what: str) -> int:
    """``value`` if it lies in 0..2**63-1; ConfigurationError naming ``what`` otherwise."""
    if not 0 <= value <= MAX_INT64:
        raise ConfigurationError(f"{what} must lie between 0 and {MAX_INT64}, got {_short(str(value))}")
    return value


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} digits)"


@dataclass(frozen=True, slots=True, kw_only=True)
class InputLimits:
    """Sizes, in UTF-8 bytes, beyond which the queue refuses what it is given.

    A call whose arguments exceed ``args_bytes`` is denied at submission (the model reads why); an edit
    over it, or a message or note over its limit, is refused as an invalid decision.
    """

    args_bytes: int = 256 * KIB
    """A call's arguments, or an edit's, as canonical JSON."""
    message_bytes: int = 16 * KIB
    """A rejection message, a response's content, a standing rule's message, a cancellation's reason."""
    note_bytes: int = 16 * KIB
    """A reviewer's note for the audit log."""

    def __post_init__(self) -> None:
        for name in ("args_bytes", "message_bytes", "note_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_INT64:
                raise ConfigurationError(f"limit {name} must be a positive whole number of bytes, got {value!r}")


DEFAULT_LIMITS = InputLimits()

"""How much crossgate accepts from outside: integer ranges, JSON shape, and the sizes of what a person or a
model sends.

Every value here bounds input that reaches the store: the store's integers are signed 64-bit, JSON
follows :mod:`crossgate.fingerprint` (at most ``MAX_JSON_DEPTH`` levels, numbers of at most
``MAX_NUMBER_DIGITS`` digits, no lone surrogates), and the sizes in :class:`InputLimits` (in UTF-8
bytes) keep one call, one decision or one note from filling the database. Input beyond them is refused
with a clear message before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crossgate.errors import ConfigurationError, InvalidArgumentsError, InvalidDecisionError
from crossgate.fingerprint import ENVELOPE_DEPTH, MAX_JSON_DEPTH, canonical_json, require_json

if TYPE_CHECKING:
    from crossgate.model import Approve, Edit, JsonObject, Reject, Respond, ToolCall

MAX_INT64 = 2**63 - 1
"""The largest sequence number, limit or count the stores hold (SQLite and PostgreSQL ``bigint``)."""
KIB = 1024
MIB = 1024 * KIB
MAX_SECONDS = 100 * 365 * 24 * 3600
"""The longest span crossgate takes for a timeout or an apply window (about a century): a longer one could
not be added to a date."""


def check_int64(value: int, what: str) -> int:
    """``value`` if it lies in 0..2**63-1; ConfigurationError naming ``what`` otherwise."""
    if not 0 <= value <= MAX_INT64:
        raise ConfigurationError(f"{what} must lie between 0 and {MAX_INT64}, got {_short(str(value))}")
    return value


def check_seconds(value: float | None, what: str) -> float | None:
    """``value`` if it is None or a span in (0, ``MAX_SECONDS``] seconds; ConfigurationError naming ``what`` if not."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_SECONDS:
        raise ConfigurationError(f"{what} must be a number of seconds in (0, {MAX_SECONDS}], got {_short(str(value))}")
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

    def args_problem(self, args: JsonObject) -> str | None:
        """Why ``args`` cannot be taken as arguments (not JSON crossgate accepts, or over ``args_bytes``), or None."""
        try:
            size = len(canonical_json(args, max_depth=MAX_JSON_DEPTH).encode("utf-8"))
        except InvalidArgumentsError as exc:
            return f"its arguments are not accepted: {exc}"
        if size > self.args_bytes:
            return f"its arguments are {size} bytes as JSON, over the limit of {self.args_bytes} bytes"
        return None

    def call_problem(self, call: ToolCall) -> str | None:
        """Why the queue refuses ``call`` without asking anyone, or None: its arguments, or text that is not text."""
        try:
            # Every field but the arguments, checked as canonical JSON is (not encoded: only the check counts).
            fields = {name: value for name, value in call.__dict__.items() if name != "args"}
            require_json(fields, max_depth=MAX_JSON_DEPTH + ENVELOPE_DEPTH)
        except InvalidArgumentsError as exc:
            return f"the call is not accepted: {exc}"
        return self.args_problem(call.args)

    def check_decision(self, decision: Approve | Edit | Reject | Respond) -> None:
        """Raise InvalidDecisionError (InvalidArgumentsError for an edit's arguments) for a decision over a limit."""
        args = getattr(decision, "args", None)
        if args is not None and (problem := self.args_problem(args)) is not None:
            raise InvalidArgumentsError(f"the edit is refused: {problem.removeprefix('its ')}")
        for field in ("message", "content"):
            self.check_text(getattr(decision, field, None), f"the {field}", self.message_bytes)
        self.check_text(decision.note, "the note", self.note_bytes)
        try:
            canonical_json(decision.model_dump(mode="python", exclude={"args"}))
        except InvalidArgumentsError as exc:
            raise InvalidDecisionError(f"the decision is not accepted: {exc}") from None

    def check_text(self, text: str | None, what: str, limit: int) -> None:
        """Raise InvalidDecisionError if ``text`` is over ``limit`` UTF-8 bytes or holds a lone surrogate."""
        if text is None:
            return
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            code = ord(text[exc.start])
            raise InvalidDecisionError(f"{what} holds a lone surrogate (U+{code:04X}), which is not text") from None
        if size > limit:
            raise InvalidDecisionError(f"{what} is {size} bytes, over the limit of {limit} bytes")


DEFAULT_LIMITS = InputLimits()


def storable_text(value: object) -> str | None:
    """``value`` as text UTF-8 can hold (a lone surrogate written as ``\\udXXX``); None stays None."""
    if value is None:
        return None
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")

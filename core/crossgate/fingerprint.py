"""Canonical JSON and the fingerprint that binds every decision to one tool call.

The canonical form of a JSON value, used for fingerprints and for the audit chain:

- objects: keys sorted by their Unicode code points, each key a string;
- no whitespace: ``,`` between items and ``:`` between key and value;
- strings: UTF-8, not escaped beyond what JSON requires (``"é"`` stays ``é``), never Unicode-normalised,
  so two strings that look alike but differ in code points get different fingerprints;
- numbers: integers as decimal digits; a float with an integral value up to 2**53 is written as that
  integer (``1.0`` and ``1`` are the same argument, as in JavaScript and RFC 8785); other floats in
  Python's shortest round-trip form (``0.1``, ``1e-07``); NaN and infinities are refused;
- ``true``, ``false``, ``null`` as in JSON.

Only what every JSON reader agrees on has a canonical form, so some values are refused (with
InvalidArgumentsError, naming where): nesting deeper than ``MAX_JSON_DEPTH`` (64) levels, integers of
more than ``MAX_NUMBER_DIGITS`` (100) digits, strings or keys holding a lone surrogate (U+D800 to
U+DFFF, which UTF-8 cannot encode). ``parse_json`` also refuses, in JSON text, an object that repeats a
key (readers disagree on which value counts) and text that is not UTF-8.

``fingerprint(tool, args)`` is the lowercase hex sha256 of the canonical form of ``{"tool": tool, "args": args}``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from crossgate.errors import InvalidArgumentsError

MAX_JSON_DEPTH = 64
"""How deeply JSON arguments may nest: an object or array inside another counts one level more."""
ENVELOPE_DEPTH = 8
"""Levels crossgate's own records and bodies may add around arguments (an event's payload, a batch's item):
canonical JSON, and a request body, may nest ``MAX_JSON_DEPTH + ENVELOPE_DEPTH`` levels."""
MAX_NUMBER_DIGITS = 100
"""The most digits a JSON number may have (an integer's, or a decimal's before its exponent)."""
_MAX_EXACT_INT_FLOAT = 2**53
_MAX_INT = 10**MAX_NUMBER_DIGITS
_TOO_DEEP = f"nested too deeply (arguments may nest {MAX_JSON_DEPTH} levels deep)"
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NotJson(Exception):
    """A value that is not JSON, with the path to it built while the exception unwinds."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []

    def at(self) -> str:
        path = "$" + "".join(reversed(self.steps))
        return path if len(path) <= 80 else f"{path[:40]}…{path[-30:]}"


def _normalise(value: Any, depth: int = 0) -> Any:
    """``value`` in canonical form; the very same object when it already is (the common case).

    ``depth`` counts the objects and arrays around ``value``.
    """
    kind = type(value)
    if kind is str:
        if not value.isascii() and (found := _SURROGATE.search(value)):
            raise _NotJson(_surrogate_problem(found[0]))
        return value
    if kind is int:
        if not -_MAX_INT < value < _MAX_INT:
            raise _NotJson(f"integers may have at most {MAX_NUMBER_DIGITS} digits")
        return value
    if kind is bool or value is None:
        return value
    if kind is dict or kind is list or kind is tuple:
        if depth >= MAX_JSON_DEPTH:
            raise _NotJson(_TOO_DEEP)
        depth += 1
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            raise _NotJson("NaN and infinity are not JSON numbers")
        if value.is_integer() and abs(value) <= _MAX_EXACT_INT_FLOAT:
            return int(value)
        return value
    if kind is dict:
        copied: dict[str, Any] | None = None
        for key, item in value.items():
            if type(key) is not str:
                raise _NotJson(f"object keys must be strings, got {key!r}")
            if not key.isascii() and (found := _SURROGATE.search(key)):
                raise _NotJson(f"a key {_surrogate_problem(found[0])}")
            try:
                normal = _normalise(item, depth)
            except _NotJson as exc:
                exc.steps.append(f".{key}")
                raise
            if normal is not item:
                if copied is None:
                    copied = dict(value)
                copied[key] = normal
        return value if copied is None else copied
    if kind is list or kind is tuple:
        items: list[Any] | None = None if kind is list else list(value)
        for index, item in enumerate(value):
            try:
                normal = _normalise(item, depth)
            except _NotJson as exc:
                exc.steps.append(f"[{index}]")
                raise
            if normal is not item:
                if items is None:
                    items = list(value)
                items[index] = normal
        return value if items is None else items
    return _normalise_other(value, depth)


def _surrogate_problem(char: str) -> str:
    return f"holds a lone surrogate (U+{ord(char):04X}), which is not text"


def _normalise_other(value: Any, depth: int) -> Any:
    # Subclasses of the JSON types (an IntEnum, a StrEnum, an OrderedDict) and other mappings.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return _normalise(int(value), depth)
    if isinstance(value, float):
        return _normalise(float(value), depth)
    if isinstance(value, Mapping):
        return _normalise(dict(value), depth)
    if isinstance(value, (list, tuple)):
        return _normalise(list(value), depth)
    raise _NotJson(f"{type(value).__name__} is not a JSON value")


def json_string(text: str) -> str:
    """``text`` as a canonical JSON string (the quoted form ``canonical_json`` writes)."""
    return _encode_string(str(text))


_encode_string = json.encoder.encode_basestring
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH + ENVELOPE_DEPTH) -> str:
    """Return the canonical JSON text of ``value`` (see the module docstring).

    By default it may nest ``ENVELOPE_DEPTH`` levels more than arguments may: records carry arguments
    inside them. Pass ``max_depth=MAX_JSON_DEPTH`` to hold ``value`` to the arguments' limit.
    """
    return _ENCODER.encode(_canonical_value(value, max_depth))


def require_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise InvalidArgumentsError, naming where, unless ``value`` is a JSON value crossgate accepts as arguments
    (or, with ``max_depth``, one that ``canonical_json`` accepts at that depth)."""
    _canonical_value(value, max_depth)


def _canonical_value(value: Any, max_depth: int) -> Any:
    try:
        return _normalise(value, MAX_JSON_DEPTH - max_depth)
    except _NotJson as exc:
        raise InvalidArgumentsError(f"{exc.at()}: {exc.problem}") from None


def fingerprint(tool: str, args: Mapping[str, Any]) -> str:
    """Return the sha256 hex digest binding a decision to ``tool`` called with ``args``."""
    text = canonical_json({"tool": tool, "args": args})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def same_json(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` are the same JSON value with the same Python types at every level.

    Values it calls the same have the same canonical form, so the same fingerprint. It may call two values
    different that canonical JSON equates (``1`` and ``1.0``): a caller treats that as "not known to be the
    same" and checks the long way. Unlike ``==``, it never equates ``True`` with ``1``.
    """
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and all(k in b and same_json(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return kind in _SCALARS and bool(a == b)


_SCALARS = (str, int, float, bool, type(None))


def parse_args(raw: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """Parse tool arguments as a model sent them; refuse anything but a JSON object."""
    if isinstance(raw, Mapping):
        value: Any = dict(raw)
        require_json(value)
    else:
        if not (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip():
            raise InvalidArgumentsError("arguments are empty; expected a JSON object")
        value = parse_json(raw, what="arguments")
    if not isinstance(value, dict):
        raise InvalidArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def parse_json(raw: str | bytes, *, what: str = "the JSON text", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON text as crossgate accepts it, from anyone: a model, a reviewer, a file.

    Refused with InvalidArgumentsError, whose message starts with ``what`` (``"arguments"``, ``"the
    request body"``): text that is not UTF-8 or not JSON, NaN and infinities, an object that repeats a
    key, nesting deeper than ``max_depth`` levels, numbers of more than ``MAX_NUMBER_DIGITS`` digits,
    lone surrogates (see the module docstring). Never RecursionError, ValueError or UnicodeError.
    """
    be = "are" if what.endswith("s") else "is"
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgumentsError(f"{what} {be} not UTF-8 (at byte {exc.start})") from None
    else:
        text = raw
    try:
        value = _decoder().decode(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentsError(f"{what} {be} not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        value, problem = None, f"$: {_TOO_DEEP}"
    except _NotJson as exc:
        value, problem = None, exc.problem
    else:
        try:
            return _normalise(value, MAX_JSON_DEPTH - max_depth)
        except _NotJson as exc:
            problem = f"{exc.at()}: {exc.problem}"
    raise InvalidArgumentsError(f"{what} {be} refused: {problem}")


@functools.cache
def _decoder() -> json.JSONDecoder:
    def refuse_constant(name: str) -> Any:
        raise _NotJson(f"{name} is not a JSON number")

    def parse_int(digits: str) -> int:
        if len(digits) - digits.startswith("-") > MAX_NUMBER_DIGITS:
            raise _NotJson(f"an integer has more than {MAX_NUMBER_DIGITS} digits")
        return int(digits)

    def parse_float(text: str) -> float:
        mantissa = re.split("[eE]", text, maxsplit=1)[0]
        if sum(ch.isdigit() for ch in mantissa) > MAX_NUMBER_DIGITS:
            raise _NotJson(f"a number has more than {MAX_NUMBER_DIGITS} digits")
        number = float(text)
        if math.isinf(number):
            raise _NotJson(f"{text[:40]} is beyond the range of a JSON number")
        return number

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)
        if len(found) != len(pairs):
            seen: set[str] = set()
            repeated = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            raise _NotJson(f"an object repeats the key {repeated[:60]!r}")
        return found

    return json.JSONDecoder(
        parse_constant=refuse_constant, parse_int=parse_int, parse_float=parse_float, object_pairs_hook=unique_keys
    )

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

``fingerprint(tool, args)`` is the lowercase hex sha256 of the canonical form of ``{"tool": tool, "args": args}``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from crossgate.errors import InvalidArgumentsError

_MAX_EXACT_INT_FLOAT = 2**53


class _NotJson(Exception):
    """A value that is not JSON, with the path to it built while the exception unwinds."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []

    def at(self) -> str:
        return "$" + "".join(reversed(self.steps))


def _normalise(value: Any) -> Any:
    """``value`` in canonical form; the very same object when it already is (the common case)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
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
            try:
                normal = _normalise(item)
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
                normal = _normalise(item)
            except _NotJson as exc:
                exc.steps.append(f"[{index}]")
                raise
            if normal is not item:
                if items is None:
                    items = list(value)
                items[index] = normal
        return value if items is None else items
    return _normalise_other(value)


def _normalise_other(value: Any) -> Any:
    # Subclasses of the JSON types (an IntEnum, a StrEnum, an OrderedDict) and other mappings.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _normalise(float(value))
    if isinstance(value, Mapping):
        return _normalise(dict(value))
    if isinstance(value, (list, tuple)):
        return _normalise(list(value))
    raise _NotJson(f"{type(value).__name__} is not a JSON value")


def json_string(text: str) -> str:
    """``text`` as a canonical JSON string (the quoted form ``canonical_json`` writes)."""
    return _encode_string(str(text))


_encode_string = json.encoder.encode_basestring
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (see the module docstring)."""
    return _ENCODER.encode(_canonical_value(value))


def require_json(value: Any) -> None:
    """Raise InvalidArgumentsError, naming where, unless ``value`` is a JSON value."""
    _canonical_value(value)


def _canonical_value(value: Any) -> Any:
    try:
        return _normalise(value)
    except _NotJson as exc:
        raise InvalidArgumentsError(f"{exc.at()}: {exc.problem}") from None


def fingerprint(tool: str, args: Mapping[str, Any]) -> str:
    """Return the sha256 hex digest binding a decision to ``tool`` called with ``args``."""
    text = canonical_json({"tool": tool, "args": args})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_args(raw: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """Parse tool arguments as a model sent them; refuse anything but a JSON object."""
    if isinstance(raw, Mapping):
        value: Any = dict(raw)
    else:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if not text.strip():
            raise InvalidArgumentsError("arguments are empty; expected a JSON object")
        try:
            value = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentsError(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from exc
    if not isinstance(value, dict):
        raise InvalidArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
    require_json(value)
    return value


def _refuse_constant(name: str) -> Any:
    raise InvalidArgumentsError(f"arguments contain {name}, which is not a JSON number")

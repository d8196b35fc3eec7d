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


def _normalise(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidArgumentsError(f"{path}: NaN and infinity are not JSON numbers")
        if value.is_integer() and abs(value) <= _MAX_EXACT_INT_FLOAT:
            return int(value)
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgumentsError(f"{path}: object keys must be strings, got {key!r}")
            out[key] = _normalise(item, f"{path}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise InvalidArgumentsError(f"{path}: {type(value).__name__} is not a JSON value")


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (see the module docstring)."""
    return json.dumps(
        _normalise(value, "$"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


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
    _normalise(value, "$")
    return value


def _refuse_constant(name: str) -> Any:
    raise InvalidArgumentsError(f"arguments contain {name}, which is not a JSON number")

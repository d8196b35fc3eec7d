"""The consumed approvals a state head vouches for, as a Bloom filter: a fixed, small size per approval.

A head must let a gate answer "was this approval applied already?" for every approval that could still
apply (its signed ``apply_by`` not passed). Listing their ids would grow the signed token by ~80 bytes per
approval, past what a token may hold at a few thousand approvals an hour. A Bloom filter of 16 bits per
approval (11 hash positions from one sha256) answers with no false "not consumed" ever, and a false
"consumed" (a genuine approval refused, fail closed: a reviewer decides again) for at most ~0.05% of
approvals when full, far less below capacity.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable

BITS_PER_ENTRY = 16
HASHES = 11
MIN_BITS = 4096


def _positions(request_id: str, bits: int) -> list[int]:
    digest = hashlib.sha256(request_id.encode("utf-8")).digest()
    first, second = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big") | 1
    return [(first + i * second) % bits for i in range(HASHES)]


def build_filter(request_ids: Iterable[str], carried: bytes = b"") -> str:
    """The base64url filter (no padding) holding ``request_ids`` and whatever the filter ``carried`` held.

    Its size is a power of two in bits, at least ``carried``'s: a smaller carried filter is repeated to fill
    it, so each bit position keeps the bit it had modulo the carried size (nothing carried is forgotten).
    """
    ids = list(request_ids)
    bits = max(MIN_BITS, len(carried) * 8)
    while bits < BITS_PER_ENTRY * len(ids):
        bits *= 2
    array = bytearray(carried * (bits // (len(carried) * 8))) if carried else bytearray(bits // 8)
    for request_id in ids:
        for position in _positions(request_id, bits):
            array[position // 8] |= 1 << (position % 8)
    return base64.urlsafe_b64encode(bytes(array)).rstrip(b"=").decode("ascii")


def filter_bytes(encoded: str) -> bytes:
    """The filter's bytes; ValueError if ``encoded`` is not a filter :func:`build_filter` could make."""
    raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    bits = len(raw) * 8
    if bits < MIN_BITS or bits & (bits - 1):
        raise ValueError("a consumed-approvals filter is a power of two of at least 4096 bits")
    return raw


def in_filter(raw: bytes, request_id: str) -> bool:
    """True when ``request_id`` may be in the filter (False: it certainly is not)."""
    bits = len(raw) * 8
    return all(raw[p // 8] >> (p % 8) & 1 for p in _positions(request_id, bits))


def merge_filters(first: bytes, second: bytes) -> bytes:
    """One filter holding what both held: the smaller repeated to the larger's size, then OR-ed."""
    if not first or not second:
        return first or second
    size = max(len(first), len(second))
    a, b = first * (size // len(first)), second * (size // len(second))
    return bytes(x | y for x, y in zip(a, b, strict=True))


class GrowingFilter:
    """A filter kept between heads: ids are added in place; it is rebuilt only to grow or to drop ids."""

    def __init__(self) -> None:
        self._array = bytearray(MIN_BITS // 8)
        self._ids: set[str] = set()
        self._carried = b""

    def add(self, request_id: str) -> None:
        """Add ``request_id`` (rebuilding at twice the size when it is full)."""
        if request_id in self._ids:
            return
        self._ids.add(request_id)
        bits = len(self._array) * 8
        if BITS_PER_ENTRY * len(self._ids) > bits:
            self.rebuild(self._ids, self._carried)
            return
        for position in _positions(request_id, bits):
            self._array[position // 8] |= 1 << (position % 8)

    def rebuild(self, request_ids: Iterable[str], carried: bytes = b"") -> None:
        """Hold exactly ``request_ids`` and what ``carried`` held."""
        self._ids = set(request_ids)
        self._carried = carried
        self._array = bytearray(filter_bytes(build_filter(self._ids, carried)))

    def encoded(self) -> str:
        """The filter as a head carries it."""
        return base64.urlsafe_b64encode(bytes(self._array)).rstrip(b"=").decode("ascii")

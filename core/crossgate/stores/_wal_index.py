"""Whether anyone committed to a SQLite database since a moment, without asking SQLite.

Every commit to a database in WAL mode, from any connection of any process, changes the header of its
WAL index (the ``-shm`` file every connection maps; format: https://sqlite.org/walformat.html): the
transaction counter ``iChange``, the last valid frame ``mxFrame``, and after a WAL reset its salts. A
connection asking a small question right after another connection committed pays for that commit
(SQLite drops its page cache and reads pages again): tens of microseconds, on every allowed call when
the audit writer has just committed. Reading the header's 48 bytes from a shared mapping costs a
fraction of a microsecond.

The header is only ever used to skip a read whose answer cannot have changed: when the bytes differ,
are torn, or cannot be read, the caller reads the database. A commit that lands after the bytes are
read is one the caller could not have seen yet either way.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time
from pathlib import Path

HEADER_BYTES = 48
"""One copy of the WAL-index header; SQLite keeps two, one after the other, written in turn."""
RECHECK_SECONDS = 1.0
"""How often the ``-shm`` file's identity is checked against the one mapped."""
WAL_INDEX_VERSION = 3007000
"""``iVersion``, the header's first field (native byte order), of every WAL index since SQLite 3.7.0."""


class WalIndexWatch:
    """The WAL-index header of one database file, read from a read-only mapping of its ``-shm`` file.

    :meth:`mark` is the header's bytes now, or None when they cannot be trusted (no ``-shm`` file, a
    file that was replaced, a header being written, an unknown version). Two equal marks mean nobody
    committed in between.
    """

    def __init__(self, database: Path) -> None:
        self.path = Path(f"{database}-shm")
        self._lock = threading.Lock()
        self._map: mmap.mmap | None = None
        self._identity: tuple[int, int] | None = None
        self._checked_at = 0.0

    def mark(self) -> bytes | None:
        """The header now, or None (then the caller reads the database)."""
        mapped = self._map
        now = time.monotonic()
        if mapped is None or now - self._checked_at > RECHECK_SECONDS:
            mapped = self._check(now)
            if mapped is None:
                return None
        try:
            header = mapped[: 2 * HEADER_BYTES]
        except ValueError:  # closed meanwhile
            return None
        first, second = header[:HEADER_BYTES], header[HEADER_BYTES:]
        if first != second or int.from_bytes(first[:4], sys.byteorder) != WAL_INDEX_VERSION:
            return None
        return first

    def close(self) -> None:
        """Drop the mapping."""
        with self._lock:
            if self._map is not None:
                self._map.close()
                self._map = None
                self._identity = None

    def _check(self, now: float) -> mmap.mmap | None:
        """The mapping, made again if the ``-shm`` file is not the one mapped (checked at most once a second:
        a ``stat`` is a system call, and SQLite itself keeps using the file it opened)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        self._checked_at = now
        if self._map is not None and self._identity == (stat.st_dev, stat.st_ino):
            return self._map
        return self._remap()

    def _remap(self) -> mmap.mmap | None:
        with self._lock:
            if self._map is not None:
                self._map.close()
                self._map = None
                self._identity = None
            try:
                with open(self.path, "rb") as file:
                    stat = os.fstat(file.fileno())
                    if stat.st_size < 2 * HEADER_BYTES:
                        return None
                    self._map = mmap.mmap(file.fileno(), 2 * HEADER_BYTES, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                return None
            self._identity = (stat.st_dev, stat.st_ino)
            return self._map

"""A durable registry: every change of the AAP registry appended to a JSON-lines file, replayed on start.

The file holds instance credentials (so a provisioning replay can return the original one, as AAP
requires) and receivers' signing secrets: it is created readable by its owner only, and belongs beside
the server's other secrets, never where an agent can read it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from crossgate.errors import ConfigurationError


def _default(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps_record(record: object) -> dict[str, Any]:
    """A registry dataclass as a JSON-ready dict."""
    data: dict[str, Any] = json.loads(json.dumps(asdict(record), default=_default))  # type: ignore[call-overload]
    return data


def when(value: str | None) -> datetime | None:
    """A stored timestamp back as a datetime."""
    return None if value is None else datetime.fromisoformat(value)


class Journal:
    """Append-only JSON lines, each ``{"kind": ..., "data": ...}``, flushed and fsynced per entry."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
        except OSError as exc:
            raise ConfigurationError(f"cannot open the AAP registry {self.path}: {exc.strerror}") from None
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        if self.path.stat().st_size and not self.path.read_bytes().endswith(b"\n"):
            self._file.write("\n")  # end a line torn by a crash, so the next entry starts on its own
            self._file.flush()

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every entry so far, oldest first; a torn last line (a crash mid-write) is skipped."""
        with self.path.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                yield str(entry["kind"]), dict(entry["data"])

    def append(self, kind: str, data: dict[str, Any]) -> None:
        """Write one entry durably."""
        line = json.dumps({"kind": kind, "data": data}, separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        self._file.close()

"""Time and ids: one place, so tests can inject a clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    """A random id with a readable prefix: ``req_…``, ``rule_…``, ``park_…``."""
    return f"{prefix}_{uuid.uuid4().hex}"

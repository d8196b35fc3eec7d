"""``FailingStore``: a real store whose chosen operations raise ``StoreError``, as a database that went away would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crossgate import ApprovalRequest, Store, StoreError

Condition = Callable[..., bool]
"""Given a store call's arguments: whether this call fails."""


def always(*args: object, **kwargs: object) -> bool:
    """Every call fails."""
    return True


def applying(request: ApprovalRequest, *args: object, **kwargs: object) -> bool:
    """``update_request`` as ``mark_applied`` calls it (the row about to become applied)."""
    return request.is_applied


class FailingStore:
    """Delegates every call to ``inner``; a method named in :meth:`fail` raises StoreError while armed.

    Give it to ``ReviewQueue`` as its store (``ReviewQueue(FailingStore(open_store(url)), policy)``).
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.failing: dict[str, tuple[Condition, str | None]] = {}
        self.called: set[str] = set()
        self.refused: list[str] = []
        """The methods that raised, in order."""

    def fail(self, method: str, when: Condition = always, *, after: str | None = None) -> None:
        """Make ``method`` raise StoreError whenever ``when(*args, **kwargs)`` is true (once ``after`` was called)."""
        self.failing[method] = (when, after)
        self.called.clear()

    def heal(self) -> None:
        """The database is back."""
        self.failing.clear()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.failing:
                when, after = self.failing[name]
                if (after is None or after in self.called) and when(*args, **kwargs):
                    self.refused.append(name)
                    raise StoreError(f"the database is unreachable ({name})")
            result = attr(*args, **kwargs)
            self.called.add(name)
            return result

        return call

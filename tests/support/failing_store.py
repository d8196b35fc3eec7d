"""A real store whose chosen operations raise ``StoreError``: now public in the conformance kit."""

from __future__ import annotations

from crossgate.testing.failing_store import FailingStore, always, applying

__all__ = ["FailingStore", "always", "applying"]

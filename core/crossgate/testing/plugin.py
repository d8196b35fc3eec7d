"""A pytest plugin for projects running the kit: registers the markers its tests carry.

Add ``pytest_plugins = ["crossgate.testing.plugin"]`` to your top ``conftest.py`` (needed with
``--strict-markers``). ``-m "not postgres"`` then deselects the PostgreSQL runs, ``-m "not slow"`` the
scenarios that start another process.
"""

from __future__ import annotations

import pytest

MARKERS = {
    "slow": "takes more than a second (subprocesses)",
    "postgres": "needs PostgreSQL (CROSSGATE_TEST_POSTGRES_URL)",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")

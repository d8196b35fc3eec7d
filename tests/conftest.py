"""The whole test run acts as an operator holding the authority's key (see ``tests/support/keys.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.keys import operator_keys


@pytest.fixture(scope="session", autouse=True)
def _operator_key_directory() -> Iterator[None]:
    # Processes the tests start (the installed `crossgate`, servers, workers) inherit it.
    before = os.environ.get("CROSSGATE_AUTHORITY_DIR")
    os.environ["CROSSGATE_AUTHORITY_DIR"] = str(operator_keys())
    yield
    if before is None:
        os.environ.pop("CROSSGATE_AUTHORITY_DIR", None)
    else:
        os.environ["CROSSGATE_AUTHORITY_DIR"] = before

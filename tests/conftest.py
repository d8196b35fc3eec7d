"""The whole test run acts as an operator holding the authority's key (see ``tests/support/keys.py``), in a
home of its own: ``crossgate serve`` writes its first run's files to the data directory and the pin to the
config directory, which must never be the real user's (nor read back by another test's gate)."""

from __future__ import annotations

import os
import shutil
import tempfile
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


@pytest.fixture(scope="session", autouse=True)
def _own_data_and_config_directories() -> Iterator[None]:
    home = tempfile.mkdtemp(prefix="crossgate-test-home-")
    names = ("XDG_DATA_HOME", "XDG_CONFIG_HOME")
    before = {name: os.environ.get(name) for name in names}
    os.environ["XDG_DATA_HOME"] = os.path.join(home, "data")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "config")
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(home, ignore_errors=True)

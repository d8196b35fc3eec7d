"""The whole test run acts as an operator holding the authority's key (see ``tests/support/keys.py``), in a
home of its own: ``crossgate serve`` writes its first run's files to the data directory and the pin to the
config directory, which must never be the real user's (nor read back by another test's gate).

Gates need a pin or an explicit choice to run unverified: the run chooses unverified (``CROSSGATE_UNVERIFIED=1``)
for the tests of code that never decides, and every test that is about verification pins a key (the tests of
the choice itself unset it). Each test gets its own state head directory and config directory, so no head
remembered by one test (or a pin file of the machine's user, or one a first run wrote) reaches another.
"""

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
def _own_data_directory() -> Iterator[None]:
    home = tempfile.mkdtemp(prefix="crossgate-test-home-")
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = os.path.join(home, "data")
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _unverified_by_choice() -> Iterator[None]:
    before = os.environ.get("CROSSGATE_UNVERIFIED")
    os.environ["CROSSGATE_UNVERIFIED"] = "1"
    yield
    if before is None:
        os.environ.pop("CROSSGATE_UNVERIFIED", None)
    else:
        os.environ["CROSSGATE_UNVERIFIED"] = before


@pytest.fixture(autouse=True)
def _own_state_and_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with tempfile.TemporaryDirectory(prefix="crossgate-test-state-") as folder:
        monkeypatch.setenv("CROSSGATE_HEAD_DIR", os.path.join(folder, "heads"))
        if not os.environ.get("XDG_CONFIG_HOME", "").startswith(tempfile.gettempdir()):
            monkeypatch.setenv("XDG_CONFIG_HOME", os.path.join(folder, "config"))
        yield

"""The test run's operator key: one authority key directory for the whole run, removed at exit.

The command line decides only with credentials, so every test that runs ``crossgate approve`` (or edit,
reject, respond, review, rules add) in a process of its own does so as an operator holding this key:
``tests/conftest.py`` names it in ``$CROSSGATE_AUTHORITY_DIR`` for the whole run. Tests of the refusal
without a key unset the variable.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from crossgate.authority import Keyring


@functools.cache
def operator_keys() -> Path:
    """The key directory (``crossgate keys init``) of this test run."""
    folder = Path(tempfile.mkdtemp(prefix="crossgate-test-keys-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    Keyring.init(folder / "authority")
    return folder / "authority"

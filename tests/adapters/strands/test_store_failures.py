"""Fail closed when the store fails, through Strands' own event loop, hooks and tool executor: ``StoreFailureContract``.

A crossgate error in the hook leaves Strands' tool executor and ends the run.
"""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from crossgate.testing import StoreFailureContract
from tests.adapters.strands.driver import StrandsTicketDriver


class TestStrandsStoreFailures(StoreFailureContract):
    driver_class = StrandsTicketDriver

"""The Strands contract again with the agent on a ``RemoteQueue`` to a live ``crossgate serve`` (see
``tests/remote/contract.py``); here rather than in tests/remote, whose module imports every other SDK."""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from tests.adapters.strands.test_contract import TestStrandsContract
from tests.remote.contract import OverHttp

pytestmark = pytest.mark.slow


class TestStrandsOverHttp(OverHttp, TestStrandsContract):
    supports_postgres = False

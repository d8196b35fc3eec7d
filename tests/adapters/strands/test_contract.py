"""The Strands adapter passes ``AdapterContract`` and ``GateContract``, subclassed as a third party would."""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from crossgate.testing import AdapterContract, GateContract
from tests.adapters.strands.driver import StrandsTicketDriver


class TestStrandsContract(AdapterContract):
    driver_class = StrandsTicketDriver


class TestStrandsGate(GateContract):
    driver_class = StrandsTicketDriver

"""The Strands adapter passes ``AdapterContract``, subclassed as a third party would."""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from crossgate.testing import AdapterContract
from tests.adapters.strands.driver import StrandsTicketDriver


class TestStrandsContract(AdapterContract):
    driver_class = StrandsTicketDriver

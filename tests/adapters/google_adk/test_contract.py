"""The Google ADK adapter passes ``AdapterContract`` and ``GateContract``, subclassed as a third party would."""

from __future__ import annotations

from crossgate.testing import AdapterContract, GateContract
from tests.adapters.google_adk.driver import GoogleAdkTicketDriver


class TestGoogleAdkContract(AdapterContract):
    driver_class = GoogleAdkTicketDriver


class TestGoogleAdkGate(GateContract):
    driver_class = GoogleAdkTicketDriver

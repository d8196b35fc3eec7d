"""Fail closed when the store fails, through ADK's own runner and plugin pipeline: ``StoreFailureContract``.

ADK wraps a plugin's exception in RuntimeError; crossgate's own errors end the run instead.
"""

from __future__ import annotations

from crossgate.testing import StoreFailureContract
from tests.adapters.google_adk.driver import GoogleAdkTicketDriver


class TestGoogleAdkStoreFailures(StoreFailureContract):
    driver_class = GoogleAdkTicketDriver

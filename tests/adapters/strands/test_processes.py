"""Park, decide and resume in separate processes, through Strands' own event loop: ``ProcessContract``.

The driver's command line starts and resumes runs, the real ``crossgate`` command line decides, a resumer is
SIGKILLed inside the tool, and two resumers race.
"""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from crossgate.testing import ProcessContract
from tests.adapters.strands.driver import StrandsTicketDriver


class TestStrandsProcesses(ProcessContract):
    driver_class = StrandsTicketDriver

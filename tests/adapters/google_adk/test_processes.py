"""Park, decide and resume in separate processes, through ADK's own runner and plugin pipeline: ``ProcessContract``.

The driver's command line starts and resumes runs, the real ``crossgate`` command line decides, a resumer is
SIGKILLed inside the tool, and two resumers race.
"""

from __future__ import annotations

from crossgate.testing import ProcessContract
from tests.adapters.google_adk.driver import GoogleAdkTicketDriver


class TestGoogleAdkProcesses(ProcessContract):
    driver_class = GoogleAdkTicketDriver

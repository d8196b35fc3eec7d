"""Park, decide and resume in separate processes, through the SDK's own function-invocation loop: ``ProcessContract``.

The driver's command line starts and resumes runs, the real ``crossgate`` command line decides, a resumer is
SIGKILLed inside the tool, and two resumers race.
"""

from __future__ import annotations

from crossgate.testing import ProcessContract
from tests.adapters.agent_framework.driver import AgentFrameworkTicketDriver


class TestAgentFrameworkProcesses(ProcessContract):
    driver_class = AgentFrameworkTicketDriver

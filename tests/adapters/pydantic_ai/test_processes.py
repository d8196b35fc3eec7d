"""Park, decide and resume in separate processes, through Pydantic AI's own agent loop: ``ProcessContract``.

The driver's command line starts and resumes runs, the real ``crossgate`` command line decides, a resumer is
SIGKILLed inside the tool, and two resumers race.
"""

from __future__ import annotations

from crossgate.testing import ProcessContract
from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver


class TestPydanticAIProcesses(ProcessContract):
    driver_class = PydanticAITicketDriver

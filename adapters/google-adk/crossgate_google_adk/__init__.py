"""crossgate for Google ADK: gate an agent's tools with one review queue.

``Gate(queue).run(agent, prompt)`` runs the agent and returns ``Finished`` or ``Parked``; a parked run's ADK
session stays in the queue's store, and ``Gate(queue, sdk_agent=...).resume(parked_run)`` continues it in any
process once reviewers have decided. ``CAPABILITIES`` and ``DECISION_MAPPING`` publish how each crossgate
decision is expressed in this SDK.
"""

from crossgate_google_adk._capabilities import CAPABILITIES, DECISION_MAPPING, FRAMEWORK
from crossgate_google_adk._gate import Gate, RunResult

__all__ = ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate", "RunResult"]

"""crossgate for Strands Agents: gate an agent's tools with one review queue.

``Gate(queue).run(agent, prompt)`` runs the agent and returns ``Finished`` or ``Parked``; a parked run's
Strands snapshot stays in the queue's store, and ``Gate(queue, sdk_agent=...).resume(parked_run)`` continues
it in any process once reviewers have decided. ``CAPABILITIES`` and ``DECISION_MAPPING`` publish how each
crossgate decision is expressed in this SDK.
"""

from crossgate_strands._capabilities import CAPABILITIES, DECISION_MAPPING, FRAMEWORK
from crossgate_strands._gate import Gate

__all__ = ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]

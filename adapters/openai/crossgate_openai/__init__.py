"""crossgate for the OpenAI Agents SDK: gate an agent graph's tools with one review queue.

``Gate(queue).run(agent, input)`` runs the agent and returns ``Finished`` or ``Parked``; a parked run's
SDK state stays in the queue's store, and ``Gate(queue, agent=...).resume(parked_run)`` continues it in
any process once reviewers have decided. ``CAPABILITIES`` and ``DECISION_MAPPING`` publish how each
crossgate decision is expressed in this SDK.
"""

from crossgate_openai._capabilities import CAPABILITIES, DECISION_MAPPING, FRAMEWORK
from crossgate_openai._gate import Gate

__all__ = ["CAPABILITIES", "DECISION_MAPPING", "FRAMEWORK", "Gate"]

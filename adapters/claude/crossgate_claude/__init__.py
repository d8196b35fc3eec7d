"""crossgate for the Claude Agent SDK: one review queue in front of every tool call of a Claude Code session.

``Gate(queue)`` produces the ``can_use_tool`` callback and PreToolUse hook that map crossgate's
verdicts and decisions onto the SDK's permission answers, runs sessions (``run``), and resumes parked
ones from any process (``resume``; it implements ``crossgate.runs.Resumer``). ``CAPABILITIES`` and
``DECISION_MAPPING`` publish which decisions each tool allows and how each reaches the SDK.
"""

from crossgate_claude._gate import Gate
from crossgate_claude._offered import ToolNotOfferedWarning
from crossgate_claude._options import ShadowedCallbackWarning
from crossgate_claude._translate import CAPABILITIES, DECISION_MAPPING, FRAMEWORK, request_id

__all__ = [
    "CAPABILITIES",
    "DECISION_MAPPING",
    "FRAMEWORK",
    "Gate",
    "ShadowedCallbackWarning",
    "ToolNotOfferedWarning",
    "request_id",
]

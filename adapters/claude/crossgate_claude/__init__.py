"""crossgate for the Claude Agent SDK: one review queue in front of every tool call of a Claude Code session.

``ClaudeGate(queue)`` produces the ``can_use_tool`` callback and PreToolUse hook that map crossgate's
verdicts and decisions onto the SDK's permission answers, runs sessions (``run``), and resumes parked
ones from any process (``resume``; it implements ``crossgate.runs.Resumer``).
"""

from crossgate_claude._gate import ClaudeGate
from crossgate_claude._options import ShadowedCallbackWarning
from crossgate_claude._translate import CAPABILITIES, FRAMEWORK, request_id

__all__ = ["CAPABILITIES", "FRAMEWORK", "ClaudeGate", "ShadowedCallbackWarning", "request_id"]

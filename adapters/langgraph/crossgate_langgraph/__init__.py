"""crossgate for LangGraph and LangChain: interrupts and HumanInTheLoopMiddleware to neutral requests and back.

Graphs: a node calls :func:`gated_call` (the tool runs inside it and its outcome is recorded) or
:func:`request_approval` (the decision alone), or a ``ToolNode`` uses :func:`gated_tool_wrapper`.
LangChain agents: ``create_agent(..., middleware=crossgate_middleware(queue, tools))`` (extra ``[langchain]``).
Both run and resume through :class:`Gate`.
"""

from typing import TYPE_CHECKING, Any

from crossgate_langgraph._approval import DECISION_SCHEMA, gated_call, request_approval
from crossgate_langgraph._checkpointers import open_checkpointer
from crossgate_langgraph._gate import Gate
from crossgate_langgraph._shapes import APPROVAL_INTERRUPT, hitl_decision, neutral_decision, resume_command
from crossgate_langgraph._tools import gated_tool_wrapper, tool_calls_router

if TYPE_CHECKING:
    from crossgate_langgraph._middleware import CrossgateGuard, crossgate_middleware

__all__ = [
    "APPROVAL_INTERRUPT",
    "DECISION_SCHEMA",
    "CrossgateGuard",
    "Gate",
    "crossgate_middleware",
    "gated_call",
    "gated_tool_wrapper",
    "hitl_decision",
    "neutral_decision",
    "open_checkpointer",
    "request_approval",
    "resume_command",
    "tool_calls_router",
]


def __getattr__(name: str) -> Any:
    # The LangChain part is imported on first use, so graph-only users need not install langchain.
    if name in ("CrossgateGuard", "crossgate_middleware"):
        from crossgate_langgraph import _middleware

        return getattr(_middleware, name)
    raise AttributeError(f"module 'crossgate_langgraph' has no attribute {name!r}")

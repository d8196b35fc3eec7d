"""The request id of one Pydantic AI tool call.

The run's scope, each call's neutral ``ToolCall`` and the deny text are ``crossgate.adapter``'s
(``RunScope``, ``deny_message``), as is everything else an adapter shares.
"""

from __future__ import annotations

from crossgate.adapter import request_id


def pydantic_ai_request_id(run: str, agent: str, call_id: str) -> str:
    """The request id of one tool call (``crossgate.adapter.request_id`` with tag ``pa``)."""
    return request_id("pa", run, agent, call_id)

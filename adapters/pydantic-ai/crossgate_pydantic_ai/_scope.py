"""One gated run as the toolset sees it: its scope, its calls' request ids, and their neutral calls.

Everything else an adapter shares (the check before a tool runs, the resume sequence) is
``crossgate.adapter``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossgate import Submission, ToolCall, Verdict
from crossgate.adapter import request_id
from crossgate.model import JsonObject
from crossgate.queue import REQUESTED_BY
from crossgate_pydantic_ai._capabilities import FRAMEWORK


@dataclass(slots=True)
class RunScope:
    """One crossgate run as the gated toolset sees it, bound to the toolset of one SDK run."""

    run: str
    session: str | None = None
    requested_by: str | None = None
    """Who the run acts for: every request it creates carries it, so that person cannot decide them."""
    context: JsonObject = field(default_factory=dict)
    """The app's context for the run's calls (``Gate(context=)``, ``run(call_context=)``)."""
    asked: dict[str, Submission] = field(default_factory=dict)
    """The ask submissions of this SDK run, by tool call id, for the gate to park."""


def pydantic_ai_request_id(run: str, agent: str, call_id: str) -> str:
    """The request id of one tool call (``crossgate.adapter.request_id`` with tag ``pa``)."""
    return request_id("pa", run, agent, call_id)


def tool_call(tool: str, agent: str, args: JsonObject, call_id: str, scope: RunScope) -> ToolCall:
    """The neutral call: the app's context for the run, and who the run acts for (over any app key of that name)."""
    context = dict(scope.context)
    context.pop(REQUESTED_BY, None)
    if scope.requested_by is not None:
        context[REQUESTED_BY] = scope.requested_by
    return ToolCall(
        framework=FRAMEWORK,
        tool=tool,
        args=args,
        call_id=call_id,
        run=scope.run,
        session=scope.session,
        agent=agent,
        context=context,
    )


def deny_message(tool: str, verdict: Verdict) -> str:
    """What the model reads for a policy deny: the rule's reason, as an instruction."""
    return f"crossgate did not run {tool}: {verdict.reason or 'the policy does not allow this call'}"

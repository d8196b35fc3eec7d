"""What a remembered decision will cover, in words: every channel says it before and after a rule is saved.

A reviewer who approves ``delete_ticket {"id": "t3"}`` "forever" must know whether that also lets
``delete_ticket {"id": "t2"}`` run. The CLI's success line, the API's ``remember_covers`` and the page's
remember control all use this one text, so they never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from crossgate.model import ApprovalRequest, Remember, RememberMatch, RememberScope, ToolCall, Verdict, VerdictKind


def remember_coverage(
    call: ToolCall, remember: Remember, args: Mapping[str, Any] | None = None, *, edited: bool = False
) -> str:
    """Which later calls a standing rule made from ``remember`` on ``call`` covers, and for how long
    (scope ``once`` remembers nothing, and reads as ``forever`` would: ask :func:`decision_coverage`).

    ``args`` are the arguments the decision runs (an edit's), defaulting to the call's; ``edited`` says "the
    edited arguments" instead, for a form that does not know them yet. For example
    ``delete_ticket with exactly {"id": "t3"}, forever`` or ``every call of delete_ticket, for the rest of run r1``.
    """
    return f"{_calls(call, remember, call.args if args is None else args, edited)}, {_how_long(call, remember)}"


def remember_scopes(call: ToolCall) -> list[tuple[RememberScope, str]]:
    """The scopes a decision on ``call`` may be remembered for, each with the label every form shows."""
    scopes = [(RememberScope.ONCE, "Just this once")]
    if call.run:
        scopes.append((RememberScope.RUN, "For the rest of this run"))
    if call.session_key:
        scopes.append((RememberScope.SESSION, "For this session"))
    scopes.append((RememberScope.FOREVER, "From now on"))
    return scopes


def decision_coverage(request: ApprovalRequest) -> str | None:
    """What the standing rule remembered with ``request``'s decision covers; None when nothing was remembered."""
    decision = request.decision
    if decision is None or decision.remember is None or decision.remember.scope is RememberScope.ONCE:
        return None  # "once" stores no standing rule
    return remember_coverage(request.call, decision.remember, request.approved_args())


def _calls(call: ToolCall, remember: Remember, args: Mapping[str, Any], edited: bool) -> str:
    if remember.match is RememberMatch.EXACT:
        exact = "the edited arguments" if edited else json.dumps(args, ensure_ascii=False, sort_keys=True)
        what = f"{call.tool} with exactly {exact}"
    elif remember.match is RememberMatch.PATTERN:
        tests = " and ".join(
            f"{arg} matches {json.dumps(glob, ensure_ascii=False)}"
            for arg, glob in sorted(remember.arg_patterns.items())
        )
        what = f"{call.tool} where {tests}"
    else:
        what = f"every call of {call.tool}, whatever its arguments"
    if remember.this_agent_only:
        what += f", by agent {call.agent}"
    return what


def _how_long(call: ToolCall, remember: Remember) -> str:
    scope = remember.scope
    if scope is RememberScope.RUN:
        text = f"for the rest of run {call.run}"
    elif scope is RememberScope.SESSION:
        text = f"for session {call.session_key}"
    else:
        text = "forever"
    if remember.expires_at is not None:
        text += f" (until {remember.expires_at.isoformat()})"
    return text


def still_asking(verdict: Verdict) -> str | None:
    """The policy's verdict on a call after a remembered allow: the rule it still asks by (``default`` when
    none matched), or None when the rule now lets such calls run (a rule marked ``rememberable: false``)."""
    return (verdict.rule or "default") if verdict.kind is VerdictKind.ASK else None

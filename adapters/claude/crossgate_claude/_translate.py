"""Translation at the edge: Claude SDK callback arguments to neutral calls, neutral answers to SDK results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, PermissionUpdate
from claude_agent_sdk.types import PermissionRuleValue

from crossgate import (
    ApprovalRequest,
    DecisionKind,
    RememberMatch,
    RememberScope,
    ToolCall,
    adapter,
)
from crossgate_claude._names import ToolName

FRAMEWORK = "claude-agent-sdk"
ASK_USER_QUESTION = "AskUserQuestion"

CAPABILITIES: Mapping[str, tuple[DecisionKind, ...]] = {
    "*": (DecisionKind.APPROVE, DecisionKind.EDIT, DecisionKind.REJECT),
    ASK_USER_QUESTION: (DecisionKind.APPROVE, DecisionKind.EDIT, DecisionKind.REJECT, DecisionKind.RESPOND),
}
"""Decisions the adapter can express per tool. Respond has no native form except for AskUserQuestion
(the answers ride in the allowed input); for other tools the CLI would report it as an error."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: "can_use_tool -> PermissionResultAllow(updated_input=<the proposed input>)",
        DecisionKind.EDIT: "can_use_tool -> PermissionResultAllow(updated_input=<the edited input>)",
        DecisionKind.REJECT: (
            "can_use_tool -> PermissionResultDeny(message=<the reviewer's text, verbatim>), never interrupt=True "
            "(the CLI would drop the message)"
        ),
        DecisionKind.RESPOND: (
            "AskUserQuestion only: PermissionResultAllow(updated_input={questions, answers}); other tools cannot "
            "return a result without running, so respond is not offered for them"
        ),
    }
)
"""How each decision reaches the SDK. A policy deny is a PreToolUse ``deny`` (it holds in every mode);
remember is a crossgate standing rule, plus a session ``addRules`` update when it covers the whole tool
for this session; an expired or cancelled request answers like a rejection carrying its reason."""

PermissionResult = PermissionResultAllow | PermissionResultDeny


def capabilities(tool: str) -> tuple[DecisionKind, ...]:
    """The decisions a reviewer may give for a call of ``tool``."""
    return CAPABILITIES.get(tool, CAPABILITIES["*"])


def request_id(session: str | None, tool_use_id: str) -> str:
    """Deterministic request id for one tool use of one session.

    The CLI re-asks permission for the same ``tool_use_id`` when a deferred session is resumed, so the
    re-asked call must find the request the first ask created.
    """
    return adapter.request_id("claude", session or "", tool_use_id)


def to_call(
    name: ToolName,
    args: Mapping[str, Any],
    *,
    tool_use_id: str | None,
    session: str | None,
    agent: str | None,
    context: Mapping[str, Any] | None = None,
) -> ToolCall:
    """The neutral call for one Claude tool use; ``run`` and ``session`` are the Claude session id.

    The tool is named by its own name; an MCP tool's server and CLI name go into the context (``_names``).
    """
    return ToolCall(
        framework=FRAMEWORK,
        tool=name.tool,
        args=dict(args),
        call_id=tool_use_id,
        run=session,
        session=session,
        agent=agent,
        context={k: v for k, v in {**(context or {}), **name.context()}.items() if v is not None},
    )


def jsonable(value: Any) -> Any:
    """``value`` reduced to JSON types (SDK dataclasses in contexts become dicts)."""
    return json.loads(json.dumps(value, default=lambda o: getattr(o, "__dict__", str(o))))


def deny(message: str) -> PermissionResultDeny:
    """A denial the model reads verbatim (never ``interrupt``: the CLI would drop the message)."""
    return PermissionResultDeny(message=message)


def session_rules(request: ApprovalRequest) -> list[PermissionUpdate] | None:
    """A session ``addRules`` update when the reviewer remembered the whole tool for this session."""
    decision = request.decision
    remember = decision.remember if decision is not None else None
    if remember is None or remember.match is not RememberMatch.TOOL or remember.this_agent_only:
        return None
    if remember.scope not in (RememberScope.SESSION, RememberScope.RUN) or remember.expires_at is not None:
        return None
    rule = PermissionRuleValue(tool_name=str(request.call.context.get("claude_tool") or request.call.tool))
    return [PermissionUpdate(type="addRules", rules=[rule], behavior="allow", destination="session")]


def answered_questions(args: Mapping[str, Any], content: str) -> dict[str, Any]:
    """AskUserQuestion input with the reviewer's answers: ``{questions, answers}``.

    ``content`` is either a JSON object mapping question text to answer, or plain text that answers
    every question.
    """
    questions = args.get("questions") or []
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        answers = {str(k): str(v) for k, v in parsed.items()}
    else:
        answers = {str(q.get("question", "")): content for q in questions if isinstance(q, dict)}
    return {"questions": questions, "answers": answers}


def hook_output(decision: str, reason: str | None = None) -> dict[str, Any]:
    """A PreToolUse hook answer: ``allow``, ``deny``, ``ask`` or ``defer``."""
    specific: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        specific["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": specific}

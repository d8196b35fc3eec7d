"""The Block Kit message of one request, built from the request as it is now.

People read it, so everything the model wrote (tool, arguments, agent, names) is shown with hidden
characters as escapes (``crossgate.display``) and then escaped for Slack's mrkdwn, where ``<…>`` would
otherwise make a mention (``<!channel>``) or a link whose text lies about its target.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from crossgate.coverage import decision_coverage
from crossgate.display import suspicious_call, visible, visible_lines, warning_text
from crossgate.model import ApprovalRequest, DecisionKind, Event, EventKind, RequestStatus, event_kind

ACTION_PREFIX = "crossgate."
APPROVE, REJECT, EDIT, RESPOND, REMEMBER = (
    f"{ACTION_PREFIX}{k}" for k in ("approve", "reject", "edit", "respond", "remember")
)
MAX_ARGS_CHARS = 2500
Block = dict[str, Any]


def mrkdwn_escape(text: str) -> str:
    """``text`` safe inside Slack mrkdwn: ``&``, ``<`` and ``>`` as Slack's entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shown(text: str) -> str:
    """Model-written text as a person must read it in mrkdwn."""
    return mrkdwn_escape(visible(text))


def button_value(request: ApprovalRequest) -> str:
    """What each button carries: the request and the fingerprint the reviewer saw."""
    return f"{request.id}|{request.fingerprint}"


def message(request: ApprovalRequest, events: list[Event], now: datetime) -> tuple[str, list[Block]]:
    """The message's fallback text and blocks; decision buttons only while the request is open."""
    call = request.call
    who = shown(call.framework + (f" · {call.agent}" if call.agent else ""))
    headline = f"{who} asks to run `{shown(call.tool)}`"
    args = visible_lines(json.dumps(call.args, indent=2, ensure_ascii=False))
    if len(args) > MAX_ARGS_CHARS:
        args = args[:MAX_ARGS_CHARS] + "\n…"
    why = shown(request.reason or "the policy asks a person about this call")
    if request.description:
        why += f"\n{shown(request.description)}"
    blocks: list[Block] = [
        _section(f"*{headline}*"),
        _section(f"*Why a person must decide:* {why}"),
        _section(f"```{mrkdwn_escape(args)}```"),
    ]
    if findings := suspicious_call(call):
        blocks.append(_section(f":warning: *Warning:* {mrkdwn_escape(warning_text(findings))}"))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _where(request)}]})
    state = status_text(request, events, now)
    blocks.append(_section(state))
    if request.is_open and not _overdue(request, now):
        blocks.append({"type": "actions", "block_id": "crossgate.actions", "elements": _buttons(request)})
    text = f"{visible(call.framework)} asks to run {visible(call.tool)}: {state}"
    return text, blocks


def status_text(request: ApprovalRequest, events: list[Event], now: datetime) -> str:
    """Where the request stands, in words: waiting (and until when), or who decided what and whether it ran."""
    decision = request.decision
    if request.is_open:
        if _overdue(request, now):
            return ":hourglass: Past its expiry: it can no longer be decided."
        approvals = [e for e in events if e.kind == EventKind.APPROVED]
        waiting = ":large_yellow_circle: *Waiting for a reviewer*"
        if approvals:
            names = ", ".join(shown(e.actor or "?") for e in approvals)
            waiting += (
                f" · approved by {names} ({len(approvals)} of {request.approvals_required}): needs another reviewer"
            )
        if request.expires_at is not None:
            waiting += f" · expires {_when(request.expires_at)}"
        return waiting
    if request.status is RequestStatus.EXPIRED:
        return ":hourglass: *Expired* before anyone decided it; the call did not run."
    if request.status is RequestStatus.CANCELLED:
        by = next((e.actor for e in reversed(events) if e.kind == EventKind.CANCELLED and e.actor), None)
        return f":no_entry_sign: *Cancelled*{f' by {shown(by)}' if by else ''}; the call did not run."
    assert decision is not None
    verb = {
        DecisionKind.APPROVE: ":white_check_mark: *Approved*",
        DecisionKind.EDIT: ":pencil2: *Edited and approved*",
        DecisionKind.REJECT: ":x: *Rejected*",
        DecisionKind.RESPOND: ":speech_balloon: *Answered*",
    }[decision.kind]
    text = f"{verb} by {shown(decision.reviewer or '?')} via {shown(decision.channel or '?')}"
    if decision.decided_at is not None:
        text += f" {_when(decision.decided_at)}"
    text = f"{text}. {_ran_text(request, events)}"
    if covers := decision_coverage(request):
        text += f"\nRemembered: {shown(covers)}."
    return text


def _ran_text(request: ApprovalRequest, events: list[Event]) -> str:
    outcome = next((e for e in reversed(events) if event_kind(e) in (EventKind.RAN, EventKind.NOT_RUN)), None)
    if outcome is not None and event_kind(outcome) == EventKind.RAN:
        error = outcome.payload.get("error")
        return f"The call ran and failed: {shown(str(error))}" if error else "The call ran."
    if outcome is not None or request.status in (RequestStatus.REJECTED, RequestStatus.ANSWERED):
        return "The call did not run."
    if request.status is RequestStatus.APPLIED:
        return "The agent got the approval and runs the call."
    kind = request.decision.kind if request.decision else None
    if kind in (DecisionKind.REJECT, DecisionKind.RESPOND):
        return "The call does not run."
    return "The agent runs the call when it resumes."


def escalation_text(request: ApprovalRequest, now: datetime) -> str:
    """The reply in the message's thread for a request still waiting."""
    minutes = max(1, round((now - request.created_at).total_seconds() / 60))
    return f":rotating_light: Still waiting for a reviewer after {minutes} min: `{shown(request.call.tool)}`."


def _buttons(request: ApprovalRequest) -> list[Block]:
    value = button_value(request)
    allowed = request.allowed_decisions
    several = request.approvals_required > 1  # edit, respond and remember are not offered then
    buttons: list[Block] = []
    if DecisionKind.APPROVE in allowed:
        buttons.append(_button("Approve", APPROVE, value, style="primary"))
    if DecisionKind.REJECT in allowed:
        buttons.append(_button("Reject…", REJECT, value, style="danger"))
    if DecisionKind.EDIT in allowed and not several:
        buttons.append(_button("Edit…", EDIT, value))
    if DecisionKind.RESPOND in allowed and not several:
        buttons.append(_button("Respond…", RESPOND, value))
    if DecisionKind.APPROVE in allowed and not several:
        buttons.append(_button("Remember…", REMEMBER, value))
    return buttons


def _button(label: str, action_id: str, value: str, *, style: str | None = None) -> Block:
    button: Block = {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "value": value,
    }
    if style:
        button["style"] = style
    return button


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _where(request: ApprovalRequest) -> str:
    call = request.call
    parts = [f"request `{request.id}`", f"run `{shown(call.run or '—')}`"]
    if request.requested_by:
        parts.append(f"requested by {shown(request.requested_by)}")
    return " · ".join(parts)


def _when(moment: datetime) -> str:
    # Slack shows <!date^…> in each reader's time zone; the text after | is for clients that cannot.
    stamp = int(moment.timestamp())
    return f"<!date^{stamp}^{{date_short_pretty}} {{time}}|{moment.isoformat(timespec='seconds')}>"


def _overdue(request: ApprovalRequest, now: datetime) -> bool:
    return request.expires_at is not None and request.expires_at <= now

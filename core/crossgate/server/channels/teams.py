"""The Microsoft Teams message of a notification: one Adaptive Card, posted to a Teams workflow webhook.

A Teams workflow ("When a Teams webhook request is received", then "Post card in a chat or channel")
posts the card of each ``attachments`` entry. The card shows the call as the page does, and its buttons
are ``Action.OpenUrl`` to the signed links' confirm page (``/links/…``): one tap opens it, a second
decides. Everything the model wrote goes into ``TextRun``s, which Teams shows as plain text: a
``TextBlock`` or a fact would read markdown, so a model could write a link whose text lies.
"""

from __future__ import annotations

import json
from typing import Any

from crossgate.display import suspicious_call, visible, visible_lines, warning_text
from crossgate.model import ApprovalRequest, DecisionKind

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.4"
MAX_ARGS_CHARS = 2500
_BUTTONS = (("page", "Open"), (DecisionKind.APPROVE.value, "Approve"), (DecisionKind.REJECT.value, "Reject…"))


def adaptive_card_message(request: ApprovalRequest, summary: str, links: dict[str, str]) -> dict[str, Any]:
    """The webhook body: a message with one Adaptive Card for ``request``; ``summary`` says what just happened."""
    call = request.call
    args = visible_lines(json.dumps(call.args, indent=2, ensure_ascii=False))
    if len(args) > MAX_ARGS_CHARS:
        args = args[:MAX_ARGS_CHARS] + "\n…"
    facts = [
        ("Framework", call.framework),
        ("Agent", call.agent or "—"),
        ("Tool", call.tool),
        ("Run", call.run or "—"),
        ("Why a person must decide", request.reason or "the policy asks a person"),
    ]
    if request.requested_by:
        facts.append(("Requested by", request.requested_by))
    if request.expires_at is not None:
        facts.append(("Expires", request.expires_at.isoformat(timespec="minutes")))
    body: list[dict[str, Any]] = [_rich((summary, True))]
    body += [_rich((f"{label}: ", True), (visible(value), False)) for label, value in facts]
    if findings := suspicious_call(call):
        body.append(
            {"type": "TextBlock", "text": f"⚠ Warning: {warning_text(findings)}", "color": "attention", "wrap": True}
        )
    body.append({"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": args, "fontType": "Monospace"}]})
    body.append(_rich((f"request {request.id}", False)))
    actions = [{"type": "Action.OpenUrl", "title": label, "url": links[key]} for key, label in _BUTTONS if key in links]
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "body": body,
        "actions": actions,
    }
    return {
        "type": "message",
        "summary": summary[:200],
        "attachments": [{"contentType": CARD_TYPE, "contentUrl": None, "content": card}],
    }


def _rich(*runs: tuple[str, bool]) -> dict[str, Any]:
    inlines = [{"type": "TextRun", "text": text, **({"weight": "Bolder"} if bold else {})} for text, bold in runs]
    return {"type": "RichTextBlock", "inlines": inlines}

"""``/links/{token}``: decisions through signed links (channel ``link``).

GET shows what the link would do and asks for a click (so link previews in chat apps decide nothing);
POST decides. The token is verified on both, and the reviewer it names must still be configured and
in scope. A used link fails on the second POST because its request is no longer pending.
"""

# ruff: noqa: E501  (HTML templates read better unwrapped)

from __future__ import annotations

import json
from urllib.parse import parse_qs

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from crossgate.display import suspicious_call, warning_text
from crossgate.errors import ConflictError, InvalidDecisionError
from crossgate.model import DECIDED_STATUSES, ApprovalRequest, Approve, DecisionKind, Reject
from crossgate.server import views
from crossgate.server.access import require_scope
from crossgate.server.errors import UnauthenticatedError
from crossgate.server.links import LinkClaims
from crossgate.server.settings import Reviewer
from crossgate.server.state import ServerState, server_state

router = APIRouter(include_in_schema=False)


def _open_link(state: ServerState, token: str) -> tuple[LinkClaims, Reviewer, ApprovalRequest]:
    claims = state.signer.verify(token)
    reviewer = state.settings.find_reviewer(claims.reviewer)
    if reviewer is None:
        raise UnauthenticatedError(f"this link was issued to {claims.reviewer}, who is no longer a reviewer")
    request = state.queue.get(claims.request_id)
    require_scope(reviewer, request)
    if not request.is_open:
        raise ConflictError(used_message(request))
    return claims, reviewer, request


def used_message(request: ApprovalRequest, what: str = "link") -> str:
    """Why a ``what`` (a link, a Slack message) for ``request`` can no longer decide it, naming who settled it and how."""
    decision = request.decision
    if request.status in DECIDED_STATUSES and decision is not None:
        at = decision.decided_at.isoformat(timespec="seconds") if decision.decided_at else "an earlier time"
        return (
            f"This {what} can no longer be used: request {request.id} was already decided "
            f"({decision.kind.value} by {decision.reviewer} via {decision.channel} at {at}). "
            "A request is decided once."
        )
    return f"This {what} can no longer be used: request {request.id} is {request.status.value}."


def _page(request: Request, title: str, body: str, status: int = 200) -> HTMLResponse:
    html = views.layout(title, body, page="link", reviewer=None, app_title=server_state(request).settings.title)
    return HTMLResponse(html, status_code=status)


@router.get("/links/{token}", response_class=HTMLResponse)
async def confirm(token: str, request: Request) -> Response:
    state = server_state(request)
    claims, reviewer, target = await anyio.to_thread.run_sync(_open_link, state, token)
    call = target.call
    pretty = json.dumps(call.args, indent=2, ensure_ascii=False)
    if claims.decision is DecisionKind.APPROVE:
        form = '<button class="primary confirm" type="submit">Approve this call</button>'
    else:
        form = (
            '<label>Message to the agent <span class="muted">(required; the model reads it)</span>'
            '<textarea name="message" rows="3" required maxlength="4000"></textarea></label>'
            '<button class="danger confirm" type="submit">Reject this call</button>'
        )
    findings = suspicious_call(call)
    warning = f'<p class="notice" role="alert">⚠ Warning: {views.e(warning_text(findings))}</p>' if findings else ""
    description = f'<p class="description">{views.e(target.description)}</p>' if target.description else ""
    expires = (
        f' · expires <time datetime="{target.expires_at.isoformat()}">{target.expires_at.isoformat(timespec="minutes")}</time>'
        if target.expires_at
        else ""
    )
    body = f"""<section class="card confirm-card"><h1>{views.e(claims.decision.value.capitalize())}: <span class="tool">{views.e(call.tool)}</span></h1>
<p class="confirm-who">{views.framework_badge(call.framework)} {views.e(call.agent or "")} · run <code>{views.e(call.run or "—")}</code>{expires}</p>
<p class="reason"><span class="muted">Why a person must decide:</span> {views.e(target.reason)}</p>{description}{warning}
<pre class="json confirm-args">{views.e(pretty)}</pre>
<p class="muted">Signed for {views.e(reviewer.name)}. The decision is recorded under that name, channel “link”.</p>
<form method="post" class="link-form">{form}</form></section>"""
    return _page(request, "Decide by link", body)


@router.post("/links/{token}", response_class=HTMLResponse)
async def decide(token: str, request: Request) -> Response:
    state = server_state(request)
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    message = (form.get("message") or [""])[0].strip()

    def apply() -> ApprovalRequest:
        claims, reviewer, target = _open_link(state, token)
        if claims.decision is DecisionKind.APPROVE:
            decision: Approve | Reject = Approve(fingerprint=claims.fingerprint)
        else:
            if not message:
                raise InvalidDecisionError("a rejection needs a message for the agent")
            decision = Reject(message=message, fingerprint=claims.fingerprint)
        try:
            return state.queue.decide(target.id, decision, reviewer=reviewer.name, channel="link")
        except ConflictError as exc:
            raise ConflictError(used_message(state.queue.get(target.id))) from exc

    decided = await anyio.to_thread.run_sync(apply)
    kind = "approved" if isinstance(decided.decision, Approve) else "rejected"
    text = f"Request {decided.id} ({decided.call.tool}) was {kind}. The agent gets the answer when its run resumes."
    return _page(request, "Decided", views.message_page("Done", text, status_class="status-200"))

"""HTML for the reviewer page, rendered on the server: plain functions returning escaped strings."""

# ruff: noqa: E501  (HTML templates read better unwrapped)

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from crossgate.coverage import remember_coverage, remember_scopes
from crossgate.display import visible_lines, visible_parts
from crossgate.model import (
    ApprovalRequest,
    DecisionKind,
    Event,
    EventKind,
    Remember,
    RememberMatch,
    RememberScope,
    StandingRule,
    ToolCall,
    event_kind,
    is_outcome,
)

FRAMEWORK_LABELS = {
    "openai-agents": "OpenAI Agents",
    "claude-agent-sdk": "Claude Agent SDK",
    "langgraph": "LangGraph",
    "langchain": "LangChain",
    "pydantic-ai": "Pydantic AI",
    "aap": "AAP",
    "ai-sdk": "AI SDK",
    "mastra": "Mastra",
    "openai-agents-ts": "OpenAI Agents (TS)",
    "claude-agent-sdk-ts": "Claude Agent SDK (TS)",
    "langgraph-ts": "LangGraph (TS)",
    "langchain-ts": "LangChain (TS)",
}
"""What the page calls each of ``crossgate.model.FRAMEWORKS`` (a test keeps the two in step)."""


def e(value: object) -> str:
    """Escape any value for HTML text or attributes, hidden characters written as visible escapes.

    Tool names and arguments come from a model: a right-to-left override, a zero-width or a control
    character in them must not change what the reviewer reads (see ``crossgate.display``). Line feeds
    stay, for pretty-printed JSON and multi-line messages; the exact values travel in ``request-data``.
    """
    return escape(visible_lines("" if value is None else str(value)), quote=True)


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(value: object) -> str:
    """JSON safe inside a ``<script>`` element in every HTML parsing state.

    Escaping only ``</`` is not enough: ``<!--<script>`` in a string puts the parser in the
    double-escaped state, where the element's own ``</script>`` no longer ends it and the rest of
    the page (its scripts included) is swallowed. ``<``, ``>`` and ``&`` occur only inside JSON
    strings, so writing them as ``\\u`` escapes keeps the value exact; ``ensure_ascii`` does the
    same for U+2028 and U+2029.
    """
    return json.dumps(value, ensure_ascii=True).translate(_SCRIPT_SAFE)


def layout(
    title: str, body: str, *, page: str, reviewer: str | None, app_title: str = "crossgate", head: int | None = None
) -> str:
    """The page frame: header with navigation, the body, the script.

    ``head`` is the event log's sequence number read before the page's data, so the live stream
    starts right after it and no change between rendering and connecting is missed.
    """
    nav = "".join(
        f'<a href="{href}" class="{"active" if key == page else ""}">{label}</a>'
        for key, href, label in (
            ("pending", "/", "Pending"),
            ("history", "/history", "History"),
            ("rules", "/rules", "Standing rules"),
            ("runs", "/runs", "Runs"),
        )
    )
    who = (
        f'<span class="who">{e(reviewer)}</span><form method="post" action="/logout"><button class="link">Sign out</button></form>'
        if reviewer
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · {e(app_title)}</title><link rel="stylesheet" href="/static/style.css"></head>
<body data-page="{e(page)}" data-head="{"" if head is None else head}"><header class="top"><a class="brand" href="/">{e(app_title)}</a>
<nav>{nav if reviewer else ""}</nav><div class="session">{who}</div></header>
<main>{body}{_KEYS if reviewer else ""}</main><script type="module" src="/static/js/main.js"></script></body></html>"""


_KEYS = """<p class="keys-hint muted">Press <kbd>?</kbd> for keyboard shortcuts.</p>
<dialog id="keys" aria-labelledby="keys-title"><h2 id="keys-title">Keyboard shortcuts</h2><table>
<tr><td><kbd>j</kbd> <kbd>k</kbd></td><td>next, previous request in the list</td></tr>
<tr><td><kbd>Enter</kbd></td><td>open the current request</td></tr>
<tr><td><kbd>a</kbd></td><td>approve: puts the focus on Approve, <kbd>Enter</kbd> then approves</td></tr>
<tr><td><kbd>r</kbd></td><td>reject: opens the message box</td></tr>
<tr><td><kbd>e</kbd></td><td>edit the arguments</td></tr>
<tr><td><kbd>/</kbd></td><td>search</td></tr>
<tr><td><kbd>?</kbd></td><td>this help; <kbd>Esc</kbd> closes it</td></tr></table>
<form method="dialog"><button class="primary">Close</button></form></dialog>"""


APPLIED_TEXT = {
    DecisionKind.APPROVE.value: "the approval reached the agent, which runs the call",
    DecisionKind.EDIT.value: "the edit reached the agent, which runs the edited call",
    DecisionKind.REJECT.value: "the model read the rejection; nothing ran",
    DecisionKind.RESPOND.value: "the model read the reviewer's answer; the tool did not run",
}
"""What an ``applied`` event means for each decision kind, in the request's timeline."""


def framework_badge(framework: str) -> str:
    label = FRAMEWORK_LABELS.get(framework, framework)
    return f'<span class="fw fw-{e(framework)}">{e(label)}</span>'


def status_pill(status: str) -> str:
    return f'<span class="pill pill-{e(status)}">{e(status)}</span>'


def when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    iso = moment.astimezone(UTC).isoformat(timespec="seconds")
    return f'<time datetime="{e(iso)}">{e(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))}</time>'


def when_short(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    utc = moment.astimezone(UTC)
    return f'<time datetime="{e(utc.isoformat(timespec="seconds"))}" title="{e(utc.isoformat(timespec="seconds"))}">{e(utc.strftime("%b %d, %H:%M:%S"))}</time>'


def marked(value: object) -> str:
    """:func:`e` for one line of model text, with each hidden character's escape marked as the page marks it."""
    return "".join(
        escape(shown, quote=True)
        if code is None
        else f'<mark class="hidden-char" title="{code}">{escape(shown)}</mark>'
        for shown, code in visible_parts("" if value is None else str(value))
    )


def compact_args(args: dict[str, Any], limit: int = 90) -> str:
    text = json.dumps(args, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _meta(request: ApprovalRequest, events: Sequence[Event]) -> str:
    call = request.call
    items = [
        ("Framework", framework_badge(call.framework)),
        ("Agent", e(call.agent or "—")),
        ("Request id", copyable(request.id, "request-id")),
        ("Run", copyable(call.run, "run")),
        ("Session", copyable(call.session, "session")),
        ("Tool call id", copyable(call.call_id, "call-id")),
        ("Requested by", e(request.requested_by or "—")),
        ("Created", when(request.created_at)),
        ("Expires", when(request.expires_at) if request.expires_at else "never"),
        ("Fingerprint", copyable(request.fingerprint, "fingerprint", shown=request.fingerprint[:16] + "…")),
    ]
    if request.approvals_required > 1:
        approvers = list(dict.fromkeys(ev.actor for ev in events if ev.kind == "approved" and ev.actor))
        names = f" ({', '.join(approvers)})" if approvers else ""
        items.append(("Approvals", e(f"{len(approvers)} of {request.approvals_required}{names}")))
    if request.apply_within_seconds is not None:
        window = f"{request.apply_within_seconds:g} s after it is given, or it lapses and the call does not run"
        items.append(("Approval good for", e(window)))
    meta = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)
    if call.context:
        meta += f'<dt class="wide">Context</dt><dd class="wide">{context_table(call.context)}</dd>'
    return meta


def copyable(value: str | None, name: str, *, shown: str | None = None) -> str:
    """``value`` as code with a copy button (the whole value, however much is shown)."""
    if not value:
        return "<code>—</code>"
    return (
        f'<code id="{e(name)}" title="{e(value)}">{e(shown or value)}</code>'
        f'<button type="button" class="copy" data-copy="{escape(value, quote=True)}" aria-label="Copy {e(name)}">Copy</button>'
    )


def context_table(context: dict[str, Any]) -> str:
    """The call's context (tenant, permission mode, cwd, parent agent, ...) as key and value rows."""
    rows = "".join(
        f'<tr><th scope="row">{e(key)}</th><td>{e(value) if isinstance(value, str) else f"<code>{e(json.dumps(value, ensure_ascii=False))}</code>"}</td></tr>'
        for key, value in sorted(context.items())
    )
    return f'<table class="context" id="context">{rows}</table>'


def request_page(
    request: ApprovalRequest, events: Sequence[Event], *, blocked: str | None, denial: str | None = None
) -> str:
    """One request: what was proposed, why it needs a person, the allowed decisions, its history.

    ``denial`` is why the policy denies the call now (a rule added since it was asked): approving it
    would be refused, so approve is not offered.
    """
    call = request.call
    offered = [k for k in request.allowed_decisions if not (denial and k is DecisionKind.APPROVE)]
    description = f'<p class="description">{e(request.description)}</p>' if request.description else ""
    pretty = json.dumps(call.args, indent=2, ensure_ascii=False)
    data = {
        "id": request.id,
        "tool": call.tool,
        "fingerprint": request.fingerprint,
        "args": call.args,
        "schema": request.args_schema,
        "allowed": [k.value for k in offered],
    }
    return f"""<p class="back"><a href="/">← Pending</a></p>
<section class="card head" id="request" data-id="{e(request.id)}" data-status="{e(request.status.value)}">
<div class="title-row"><h1><span class="tool">{e(call.tool)}</span></h1>{status_pill(request.status.value)}</div>
<dl class="meta">{_meta(request, events)}</dl></section>
<section class="card"><h2>Why a person must decide</h2><p class="reason">{e(request.reason)}</p>{description}</section>
<section class="card"><h2>Arguments</h2><pre class="json" id="args-json">{e(pretty)}</pre></section>
{excerpt_card(request)}{decision_panel(request, blocked, offered, denial, events)}
<section class="card"><h2>History</h2>{timeline(events)}</section>
<script id="request-data" type="application/json">{script_json(data)}</script>"""


def excerpt_card(request: ApprovalRequest) -> str:
    """What the run did before it asked, folded (only when the app's gate handed it over); empty otherwise."""
    excerpt = request.excerpt
    if excerpt is None:
        return ""
    parts = []
    if excerpt.user_request:
        parts.append(f'<h3>The user asked</h3><p class="excerpt-request">{e(excerpt.user_request)}</p>')
    if excerpt.messages:
        items = "".join(f"<li>{e(m)}</li>" for m in excerpt.messages)
        parts.append(f'<h3>The model said</h3><ol class="excerpt-messages">{items}</ol>')
    if excerpt.calls:
        items = "".join(f"<li><code>{e(c)}</code></li>" for c in excerpt.calls)
        parts.append(f'<h3>Calls that ran before</h3><ol class="excerpt-calls">{items}</ol>')
    return (
        '<section class="card"><details class="excerpt" id="excerpt"><summary>What the run did before asking'
        f' <span class="muted">(from the agent)</span></summary>{"".join(parts)}</details></section>\n'
    )


def decision_panel(
    request: ApprovalRequest,
    blocked: str | None,
    allowed: Sequence[DecisionKind],
    denial: str | None = None,
    events: Sequence[Event] = (),
) -> str:
    """The decisions offered, or what was decided (and what came of it), or why this reviewer may not decide."""
    if not request.is_open:
        return f'<section class="card"><h2>Outcome</h2>{outcome(request)}{ran_line(request, events)}</section>'
    if blocked is not None:
        return f'<section class="card"><h2>Decide</h2><p class="notice">{e(blocked)}</p></section>'
    denied = ""
    if denial is not None:
        denied = (
            f'<p class="notice" id="policy-denies">The policy now denies this call ({e(denial)}), so it cannot be '
            "approved as proposed. Reject it (the model reads your message), or edit it into a call the policy allows.</p>"
        )
    tabs = "".join(f'<button type="button" class="tab" data-kind="{k.value}">{_LABELS[k]}</button>' for k in allowed)
    panes = "".join(_PANES[k] for k in allowed)
    remember = _remember_fieldset(request)
    return f"""<section class="card decide" id="decide"><h2>Decide</h2>
{denied}<div class="tabs" role="tablist">{tabs}</div>
<form id="decision-form" novalidate>{panes}
<div class="common">{remember}
<label class="note">Note for the audit log <span class="muted">(optional)</span><input name="note" maxlength="2000"></label></div>
<p class="error" id="decision-error" role="alert" hidden></p>
<button type="submit" class="primary" id="decision-submit">Approve</button></form></section>"""


_LABELS = {
    DecisionKind.APPROVE: "Approve",
    DecisionKind.EDIT: "Edit arguments",
    DecisionKind.REJECT: "Reject",
    DecisionKind.RESPOND: "Respond as the tool",
}

_PANES = {
    DecisionKind.APPROVE: '<div class="pane" data-kind="approve"><p class="muted">Run the call exactly as shown above.</p></div>',
    DecisionKind.EDIT: '<div class="pane" data-kind="edit" hidden><p class="muted">The same tool runs with these arguments instead.</p><div id="edit-fields"></div></div>',
    DecisionKind.REJECT: '<div class="pane" data-kind="reject" hidden><label>Message to the agent <span class="muted">(required; the model reads it, so write it as an instruction)</span><textarea name="message" rows="3" maxlength="4000"></textarea></label></div>',
    DecisionKind.RESPOND: '<div class="pane" data-kind="respond" hidden><label>Tool result to return <span class="muted">(the tool does not run)</span><textarea name="content" rows="4" maxlength="20000"></textarea></label></div>',
}


def _remember_fieldset(request: ApprovalRequest) -> str:
    call = request.call
    scopes = remember_scopes(call)
    options = "".join(f'<option value="{s.value}">{label}</option>' for s, label in scopes)
    agent = (
        f'<label class="inline"><input type="checkbox" name="this_agent_only"> only for agent {e(call.agent)}</label>'
        if call.agent
        else ""
    )
    return f"""<fieldset class="remember" id="remember"><legend>Remember</legend>
<label>Scope <select name="scope">{options}</select></label>
<label>Covers <select name="match"><option value="exact" selected>only these exact arguments</option>
<option value="tool">every call of {e(call.tool)}</option></select></label>{agent}
{_remember_covers(call, [s for s, _ in scopes])}</fieldset>"""


def _remember_covers(call: ToolCall, scopes: list[RememberScope]) -> str:
    """What each choice of the remember control would cover, in the words the CLI and API use; the page's
    script shows the one for the current choice (``data-covers``: scope, match, agent only, edited)."""
    lines = ['<span data-covers="once">Nothing is remembered: this decision is for this call only.</span>']
    for scope in scopes[1:]:
        for match in (RememberMatch.EXACT, RememberMatch.TOOL):
            for agent_only in (False, True) if call.agent else (False,):
                for edited in (False, True) if match is RememberMatch.EXACT else (False,):
                    remember = Remember(scope=scope, match=match, this_agent_only=agent_only)
                    text = remember_coverage(call, remember, edited=edited)
                    key = f"{scope.value}:{match.value}:{int(agent_only)}:{int(edited)}"
                    lines.append(f'<span data-covers="{key}" hidden>Will remember: {e(text)}.</span>')
    return f'<p class="muted" id="remember-covers" aria-live="polite">{"".join(lines)}</p>'


def outcome(request: ApprovalRequest) -> str:
    decision = request.decision
    if decision is None:
        return f"<p>{status_pill(request.status.value)} {e(request.closed_reason or '')}</p>"
    details = ""
    if decision.kind is DecisionKind.REJECT:
        details = f"<blockquote>{e(getattr(decision, 'message', ''))}</blockquote>"
    elif decision.kind is DecisionKind.EDIT:
        details = (
            f'<pre class="json">{e(json.dumps(getattr(decision, "args", {}), indent=2, ensure_ascii=False))}</pre>'
        )
    elif decision.kind is DecisionKind.RESPOND:
        details = f"<blockquote>{e(getattr(decision, 'content', ''))}</blockquote>"
    return (
        f'<p class="decided"><strong class="kind-{e(decision.kind.value)}">{e(decision.kind.value)}</strong> by '
        f"{e(decision.reviewer)} via {e(decision.channel)}, {when(decision.decided_at)}</p>{details}"
    )


def ran_line(request: ApprovalRequest, events: Sequence[Event]) -> str:
    """Once a decided call was applied: when it ran and its result, or that it did not run and why."""
    outcomes = [ev for ev in events if is_outcome(ev)]
    if outcomes:
        last = outcomes[-1]
        if event_kind(last) == EventKind.RAN:
            result = last.payload.get("result")
            detail = f"; result: <q>{e(result)}</q>" if result else "; no result was recorded"
            return f'<p class="ran-line ran-true" id="ran-line">Ran at {when(last.at)}{detail}</p>'
        why = last.payload.get("error") or last.payload.get("result")
        return f'<p class="ran-line ran-false" id="ran-line">Did not run ({when(last.at)}){": " + e(why) if why else ""}</p>'
    if request.applied_at is not None:
        return (
            f'<p class="ran-line muted" id="ran-line">The decision reached the agent at {when(request.applied_at)}; '
            "no outcome recorded yet.</p>"
        )
    return ""


def diff_html(diff: Any) -> str:
    """An edit's diff (from the decided event) as a small table."""
    if not isinstance(diff, dict):
        return ""
    rows: list[str] = []
    for key, (old, new) in (diff.get("changed") or {}).items():
        rows.append(
            f'<tr><td>{e(key)}</td><td class="old">{e(json.dumps(old))}</td><td class="new">{e(json.dumps(new))}</td></tr>'
        )
    for key, new in (diff.get("added") or {}).items():
        rows.append(f'<tr><td>{e(key)}</td><td class="old">—</td><td class="new">{e(json.dumps(new))}</td></tr>')
    for key, old in (diff.get("removed") or {}).items():
        rows.append(f'<tr><td>{e(key)}</td><td class="old">{e(json.dumps(old))}</td><td class="new">—</td></tr>')
    return (
        f'<table class="diff"><tr><th>argument</th><th>proposed</th><th>edited</th></tr>{"".join(rows)}</table>'
        if rows
        else ""
    )


def event_detail(event: Event) -> str:
    payload = event.payload
    if event.kind == "decided":
        parts = [f'<strong class="kind-{e(payload.get("kind"))}">{e(payload.get("kind"))}</strong>']
        if payload.get("message"):
            parts.append(f"“{e(payload['message'])}”")
        if payload.get("content"):
            parts.append(f"responded “{e(payload['content'])}”")
        if payload.get("remember"):
            remember = payload["remember"]
            scope = remember.get("scope") if isinstance(remember, dict) else remember
            parts.append(f'<span class="muted">remembered ({e(scope)})</span>')
        return " ".join(parts) + diff_html(payload.get("diff"))
    if is_outcome(event):
        ran = event_kind(event) == EventKind.RAN
        said = "the tool ran" if ran else "the tool did not run"
        extra = payload.get("error") or payload.get("result")
        return f'<span class="ran-{str(ran).lower()}">{said}</span>' + (
            f' <span class="muted">{e(extra)}</span>' if extra else ""
        )
    if event.kind == EventKind.APPLIED and payload.get("kind"):
        return f'<span class="muted">{e(APPLIED_TEXT.get(str(payload["kind"]), payload["kind"]))}</span>'
    if event.kind in ("expired", "cancelled"):
        return e(payload.get("reason"))
    if event.kind == "submitted":
        return f'<span class="muted">{e(payload.get("reason"))}</span>'
    return ""


def timeline(events: Iterable[Event]) -> str:
    rows = "".join(
        f'<li class="ev ev-{e(event_kind(ev))}"><span class="ev-kind">{e(event_kind(ev))}</span>'
        f'<span class="ev-who">{e(ev.actor or "")}{" via " + e(ev.channel) if ev.channel else ""}</span>'
        f'<span class="ev-at">{when(ev.at)}</span><div class="ev-detail">{event_detail(ev)}</div></li>'
        for ev in events
    )
    return f'<ol class="timeline">{rows}</ol>' if rows else '<p class="muted">No events yet.</p>'


def rules_page(rules: Sequence[StandingRule]) -> str:
    rows = "".join(
        f'<tr data-id="{e(r.id)}"><td><span class="pill pill-{e(r.effect.value)}">{e(r.effect.value)}</span></td>'
        f"<td><code>{e(r.tool)}</code></td><td>{e(r.match.value)}"
        f"{': ' + e(json.dumps(r.arg_patterns)) if r.arg_patterns else ''}</td>"
        f"<td>{e(r.scope.value)}</td><td>{e(r.agent or 'any')}</td><td>{e(r.created_by or '—')}</td>"
        f"<td>{when(r.created_at)}</td><td>{'revoked' if r.revoked_at else '<button class=revoke type=button>Revoke</button>'}</td></tr>"
        for r in rules
    )
    table = (
        '<table class="rules"><thead><tr><th>Effect</th><th>Tool</th><th>Match</th><th>Scope</th><th>Agent</th>'
        f"<th>By</th><th>Since</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else '<p class="empty">No standing rules. Use “Remember” on a decision to add one.</p>'
    )
    return f'<section class="intro"><h1>Standing rules</h1><p class="muted">Remembered decisions, consulted by the policy in every SDK.</p></section><div class="table-wrap">{table}</div>'


def login_page(message: str | None = None) -> str:
    error = f'<p class="error">{e(message)}</p>' if message else ""
    return f"""<section class="card login"><h1>Sign in</h1>
<p class="muted">Paste your reviewer token. This browser then keeps a session (12 hours), not the token.</p>{error}
<form method="post" action="/login"><label>Token<input type="password" name="token" autocomplete="off" required autofocus></label>
<button class="primary" type="submit">Sign in</button></form>
<details class="where" id="token-help" open><summary>Where does a token come from?</summary>
<ul><li>Whoever runs the server gives each reviewer a token: an entry in its tokens file
(<code>crossgate serve --tokens reviewers.toml</code>, <code>token</code> or <code>token_env</code> per reviewer)
or a <code>name:token</code> pair in <code>$CROSSGATE_TOKENS</code>. The same token works for the HTTP API.</li>
<li>Started without reviewers, <code>crossgate serve</code> prints a sign-in address for the reviewer
<code>local</code>. That address works once; the token printed with it signs in again.</li></ul></details></section>"""


def message_page(title: str, text: str, *, status_class: str = "") -> str:
    return f'<section class="card message {e(status_class)}"><h1>{e(title)}</h1><p>{e(text)}</p><p><a href="/">Go to the review page</a></p></section>'

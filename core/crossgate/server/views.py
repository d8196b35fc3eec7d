"""HTML for the reviewer page, rendered on the server: plain functions returning escaped strings."""

# ruff: noqa: E501  (HTML templates read better unwrapped)

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from crossgate.display import visible, visible_lines
from crossgate.model import ApprovalRequest, DecisionKind, Event, RememberScope, StandingRule
from crossgate.server.listing import Filters

FRAMEWORK_LABELS = {
    "openai-agents": "OpenAI Agents",
    "claude-agent-sdk": "Claude Agent SDK",
    "langgraph": "LangGraph",
    "langchain": "LangChain",
}


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
    the page (``app.js`` included) is swallowed. ``<``, ``>`` and ``&`` occur only inside JSON
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
<main>{body}</main><script src="/static/app.js" defer></script></body></html>"""


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


def compact_args(args: dict[str, Any], limit: int = 90) -> str:
    text = json.dumps(args, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pending_list(
    requests: Sequence[ApprovalRequest], blocked: Mapping[str, str] | None = None, filters: Filters | None = None
) -> str:
    """The live list of pending requests (also served alone as a fragment for live updates).

    Each row has a checkbox for the batch decisions; ``blocked`` maps the ids the reviewer may not
    decide to the reason, and their checkboxes are disabled with it as the title.
    """
    if not requests:
        text = (
            "No pending request matches these filters."
            if filters is not None and filters.active
            else "Nothing waits for a decision. New requests appear here by themselves."
        )
        return f'<div id="pending" data-count="0"><p class="empty">{text}</p></div>'
    blocked = blocked or {}
    now = datetime.now(UTC)
    rows = "".join(
        f"""<div class="req-row" data-id="{e(r.id)}">{_pick(r, blocked.get(r.id))}<a class="req" href="/requests/{e(r.id)}" data-id="{e(r.id)}" data-framework="{e(r.call.framework)}">
<div class="req-head">{framework_badge(r.call.framework)}<span class="tool">{e(r.call.tool)}</span>{_flag(r)}
<span class="age">{relative_time(r.created_at, now)}{_time_left(r, now)}</span></div>
<code class="args">{e(compact_args(r.call.args))}</code>
<div class="req-foot"><span>{e(r.call.agent or "no agent")}</span><span>run {e(r.call.run or "—")}</span>
{f'<span class="requester">requested by {e(r.requested_by)}</span>' if r.requested_by else ""}<span class="reason">{e(r.reason)}</span></div></a>{_row_actions(r, blocked.get(r.id))}</div>"""
        for r in requests
    )
    return f'<div id="pending" data-count="{len(requests)}">{rows}</div>'


def ago_text(seconds: float) -> str:
    """How long ago, in words: ``just now``, ``12 min ago``, ``3 h ago``, ``2 d ago`` (app.js says the same)."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def left_text(seconds: float) -> str:
    """Time left, in words: ``expires in 55 min`` (rounded up), ``expires in 3 h``, or ``expired``."""
    if seconds <= 0:
        return "expired"
    if seconds < 3600:
        return f"expires in {math.ceil(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"expires in {math.ceil(seconds / 3600)} h"
    return f"expires in {math.ceil(seconds / 86400)} d"


def relative_time(moment: datetime, now: datetime) -> str:
    """``moment`` as ``12 min ago``, the exact time as its title; app.js keeps the words current."""
    iso = moment.astimezone(UTC).isoformat(timespec="seconds")
    text = ago_text((now - moment).total_seconds())
    return f'<time class="ago" datetime="{e(iso)}" title="{e(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))}">{e(text)}</time>'


def _time_left(request: ApprovalRequest, now: datetime) -> str:
    if request.expires_at is None:
        return ""
    iso = request.expires_at.astimezone(UTC).isoformat(timespec="seconds")
    text = left_text((request.expires_at - now).total_seconds())
    return f' · <time class="left" datetime="{e(iso)}" title="expires {e(iso)}">{e(text)}</time>'


def _row_actions(request: ApprovalRequest, blocked: str | None) -> str:
    """Approve and reject on the row itself, bound to the fingerprint the row shows."""
    state = f' disabled title="{e(blocked)}"' if blocked else ""
    data = f'data-id="{e(request.id)}" data-fingerprint="{e(request.fingerprint)}" data-tool="{e(request.call.tool)}"'
    buttons = []
    if DecisionKind.APPROVE in request.allowed_decisions:
        buttons.append(f'<button type="button" class="row-approve primary" {data}{state}>Approve</button>')
    if DecisionKind.REJECT in request.allowed_decisions:
        buttons.append(f'<button type="button" class="row-reject danger" {data}{state}>Reject</button>')
    return f'<div class="row-actions">{"".join(buttons)}</div>'


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _flag(request: ApprovalRequest) -> str:
    """A badge on a row whose tool or arguments hold characters ``crossgate.display`` writes as escapes."""
    texts = [request.call.tool, *_strings(request.call.args)]
    if all(visible(text) == text for text in texts):
        return ""
    return '<span class="flag" title="hidden or look-alike characters, shown as \\u escapes">hidden characters</span>'


def _pick(request: ApprovalRequest, blocked: str | None) -> str:
    """The row's checkbox; it carries the fingerprint shown, so a batch decision is bound to it as a single one is."""
    state = f' disabled title="{e(blocked)}"' if blocked else ""
    return (
        f'<label class="pick"><input type="checkbox" class="pick-box" value="{e(request.id)}" '
        f'data-fingerprint="{e(request.fingerprint)}" data-tool="{e(request.call.tool)}" '
        f'aria-label="Select {e(request.call.tool)} {e(request.id)}"{state}></label>'
    )


def pending_page(
    requests: Sequence[ApprovalRequest], blocked: Mapping[str, str] | None = None, filters: Filters | None = None
) -> str:
    """Pending requests with the filters and the batch bar: select several, approve or reject them in one request."""
    filters = filters or Filters()
    return f"""<section class="intro"><h1>Pending requests <span class="count">{len(requests)}</span></h1>
<p class="muted">Tool calls from every agent SDK that the policy sent to a person. The list updates live.</p></section>
{filter_bar("/", filters)}
{_batch_bar()}
<section class="card batch-results" id="batch-results" aria-live="polite" hidden></section>
<p class="row-status" id="row-status" role="status" hidden></p>
{pending_list(requests, blocked, filters)}"""


def filter_bar(action: str, filters: Filters) -> str:
    """Search and exact filters, sent as the page's query string (so a filtered list is a link)."""
    options = "".join(
        f'<option value="{e(key)}"{" selected" if filters.framework == key else ""}>{e(label)}</option>'
        for key, label in FRAMEWORK_LABELS.items()
    )
    if filters.framework and filters.framework not in FRAMEWORK_LABELS:
        options += f'<option value="{e(filters.framework)}" selected>{e(filters.framework)}</option>'
    fields = "".join(
        f'<label class="filter"><span>{label}</span><input name="{name}" value="{e(getattr(filters, name))}" autocomplete="off"></label>'
        for name, label in (("tool", "Tool"), ("agent", "Agent"), ("run", "Run"), ("requester", "Requested by"))
    )
    clear = f'<a class="clear" href="{e(action)}">Clear</a>' if filters.active else ""
    return f"""<form class="filters" id="filters" method="get" action="{e(action)}" role="search">
<label class="filter search"><span>Search</span><input type="search" name="q" id="search" value="{e(filters.q)}" placeholder="tool, arguments, agent, run, id, reason  ( / )" autocomplete="off"></label>
<label class="filter"><span>Framework</span><select name="framework"><option value="">any</option>{options}</select></label>
{fields}<div class="filter-actions"><button type="submit" class="primary">Filter</button>{clear}</div></form>"""


def _batch_bar() -> str:
    return """<form class="batch" id="batch" novalidate>
<div class="batch-row"><label class="inline"><input type="checkbox" id="select-all"> Select all</label>
<span class="muted" id="batch-count">none selected</span>
<button type="button" class="primary" id="approve-selected" disabled>Approve selected</button>
<button type="button" class="danger" id="reject-selected" disabled>Reject selected</button></div>
<div class="batch-reject" id="batch-reject" hidden>
<label>Message to the agents <span class="muted">(required; each model reads it, so write it as an instruction)</span><textarea name="message" rows="2" maxlength="4000"></textarea></label>
<div class="batch-row"><button type="submit" class="danger" id="reject-confirm">Reject</button><button type="button" class="link" id="reject-cancel">Cancel</button></div></div>
<label class="note">Note for the audit log <span class="muted">(optional, for each decision)</span><input name="note" maxlength="2000"></label>
<p class="error" id="batch-error" role="alert" hidden></p></form>"""


def _meta(request: ApprovalRequest, events: Sequence[Event]) -> str:
    call = request.call
    items = [
        ("Framework", framework_badge(call.framework)),
        ("Agent", e(call.agent or "—")),
        ("Run", f"<code>{e(call.run or '—')}</code>"),
        ("Session", f"<code>{e(call.session or '—')}</code>"),
        ("Tool call id", f"<code>{e(call.call_id or '—')}</code>"),
        ("Requested by", e(request.requested_by or "—")),
        ("Created", when(request.created_at)),
        ("Expires", when(request.expires_at) if request.expires_at else "never"),
        ("Fingerprint", f'<code title="{e(request.fingerprint)}">{e(request.fingerprint[:16])}…</code>'),
    ]
    if request.approvals_required > 1:
        approvers = list(dict.fromkeys(ev.actor for ev in events if ev.kind == "approved" and ev.actor))
        names = f" ({', '.join(approvers)})" if approvers else ""
        items.append(("Approvals", e(f"{len(approvers)} of {request.approvals_required}{names}")))
    if request.apply_within_seconds is not None:
        window = f"{request.apply_within_seconds:g} s after it is given, or it lapses and the call does not run"
        items.append(("Approval good for", e(window)))
    if call.context:
        items.append(("Context", f"<code>{e(compact_args(call.context, 200))}</code>"))
    return "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)


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
{decision_panel(request, blocked, offered, denial)}
<section class="card"><h2>History</h2>{timeline(events)}</section>
<script id="request-data" type="application/json">{script_json(data)}</script>"""


def decision_panel(
    request: ApprovalRequest, blocked: str | None, allowed: Sequence[DecisionKind], denial: str | None = None
) -> str:
    """The decisions offered, or what was decided, or why this reviewer may not decide."""
    if not request.is_open:
        return f'<section class="card"><h2>Outcome</h2>{outcome(request)}</section>'
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
    scopes = [(RememberScope.ONCE, "Just this once")]
    if call.run:
        scopes.append((RememberScope.RUN, "For the rest of this run"))
    if call.session_key:
        scopes.append((RememberScope.SESSION, "For this session"))
    scopes.append((RememberScope.FOREVER, "From now on"))
    options = "".join(f'<option value="{s.value}">{label}</option>' for s, label in scopes)
    agent = (
        f'<label class="inline"><input type="checkbox" name="this_agent_only"> only for agent {e(call.agent)}</label>'
        if call.agent
        else ""
    )
    return f"""<fieldset class="remember" id="remember"><legend>Remember</legend>
<label>Scope <select name="scope">{options}</select></label>
<label>Covers <select name="match"><option value="tool">every call of {e(call.tool)}</option>
<option value="exact">only these exact arguments</option></select></label>{agent}</fieldset>"""


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
    if event.kind == "executed":
        ran = "the tool ran" if payload.get("ran") else "the tool did not run"
        extra = payload.get("error") or payload.get("result")
        return f'<span class="ran-{str(bool(payload.get("ran"))).lower()}">{ran}</span>' + (
            f' <span class="muted">{e(extra)}</span>' if extra else ""
        )
    if event.kind in ("expired", "cancelled"):
        return e(payload.get("reason"))
    if event.kind == "submitted":
        return f'<span class="muted">{e(payload.get("reason"))}</span>'
    return ""


def timeline(events: Iterable[Event]) -> str:
    rows = "".join(
        f'<li class="ev ev-{e(ev.kind)}"><span class="ev-kind">{e(ev.kind)}</span>'
        f'<span class="ev-who">{e(ev.actor or "")}{" via " + e(ev.channel) if ev.channel else ""}</span>'
        f'<span class="ev-at">{when(ev.at)}</span><div class="ev-detail">{event_detail(ev)}</div></li>'
        for ev in events
    )
    return f'<ol class="timeline">{rows}</ol>' if rows else '<p class="muted">No events yet.</p>'


def ran_text(request: ApprovalRequest, events: Sequence[Event]) -> str:
    """Whether the call ran: from the adapter's ``executed`` event, else what the decision implies."""
    executed = [ev for ev in events if ev.kind == "executed"]
    if executed:
        return "yes" if executed[-1].payload.get("ran") else "no"
    resolution = request.resolution()
    if resolution is not None and resolution.kind in (DecisionKind.REJECT, DecisionKind.RESPOND):
        return "no"
    return "applied" if request.applied_at else "not yet"


def history_page(
    rows: Sequence[tuple[ApprovalRequest, Sequence[Event]]],
    audit_ok: bool,
    audit_text: str,
    *,
    filters: Filters | None = None,
    older: str | None = None,
    paged: bool = False,
) -> str:
    """Closed requests with who decided what, through which channel, the edit's diff, and whether it ran.

    ``older`` is the cursor of the next page; ``paged`` says this is not the first page.
    """
    filters = filters or Filters()
    body = []
    for request, events in rows:
        decided = next((ev for ev in events if ev.kind == "decided"), None)
        ran = ran_text(request, events)
        who = f"{e(decided.actor)} via {e(decided.channel)}" if decided else e(request.status.value)
        detail = event_detail(decided) if decided else e(request.closed_reason or "")
        body.append(
            f'<tr data-id="{e(request.id)}"><td>{when_short(request.decided_at or request.created_at)}</td>'
            f"<td>{framework_badge(request.call.framework)}</td>"
            f'<td><a href="/requests/{e(request.id)}">{e(request.call.tool)}</a><br><code class="args">{e(compact_args(request.call.args, 60))}</code></td>'
            f"<td>{e(request.call.agent or '—')}</td><td>{detail}</td><td>{who}</td>"
            f'<td class="ran ran-{ran.replace(" ", "-")}">{ran}</td></tr>'
        )
    table = (
        '<table class="history"><thead><tr><th>When</th><th>Framework</th><th>Call</th><th>Agent</th>'
        f"<th>Decision</th><th>Who</th><th>Ran</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
        if body
        else f'<p class="empty">{"No closed request matches these filters." if filters.active else "No decisions yet."}</p>'
    )
    badge = "ok" if audit_ok else "broken"
    links = []
    if paged:
        links.append(f'<a class="newest" href="/history{e(filters.query_string())}">← Newest</a>')
    if older:
        links.append(f'<a class="older" href="/history{e(filters.query_string(cursor=older))}">Older →</a>')
    pager = f'<nav class="pager" aria-label="History pages">{"".join(links)}</nav>' if links else ""
    return f"""<section class="intro"><h1>History</h1>
<p class="muted">Every closed request, newest first, 100 to a page. <span class="audit audit-{badge}">{e(audit_text)}</span></p></section>
{filter_bar("/history", filters)}
<div id="history">{table}</div>{pager}"""


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
    return f'<section class="intro"><h1>Standing rules</h1><p class="muted">Remembered decisions, consulted by the policy in every SDK.</p></section>{table}'


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

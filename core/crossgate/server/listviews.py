"""HTML for the page's lists: pending requests (with filters, batch bar and row decisions) and History."""

# ruff: noqa: E501  (HTML templates read better unwrapped)

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from crossgate.display import visible_lines
from crossgate.model import (
    ApprovalRequest,
    DecisionKind,
    Event,
    EventKind,
    ParkedRun,
    ParkedRunStatus,
    event_kind,
    is_outcome,
)
from crossgate.server.listing import Filters
from crossgate.server.views import (
    FRAMEWORK_LABELS,
    compact_args,
    e,
    event_detail,
    framework_badge,
    marked,
    when_short,
)


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
<div class="req-head">{framework_badge(r.call.framework)}<span class="tool">{marked(r.call.tool)}</span>{_flag(r)}
<span class="age">{relative_time(r.created_at, now)}{_time_left(r, now)}</span></div>
<code class="args">{marked(compact_args(r.call.args))}</code>
<div class="req-foot"><span>{e(r.call.agent or "no agent")}</span><span>run {e(r.call.run or "—")}</span>
{f'<span class="requester">requested by {e(r.requested_by)}</span>' if r.requested_by else ""}<span class="reason">{e(r.reason)}</span></div></a>{_row_actions(r, blocked.get(r.id))}</div>"""
        for r in requests
    )
    return f'<div id="pending" data-count="{len(requests)}">{rows}</div>'


def ago_text(seconds: float) -> str:
    """How long ago, in words: ``just now``, ``12 min ago``, ``3 h ago``, ``2 d ago`` (static/js/times.js says the same)."""
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
    """``moment`` as ``12 min ago``, the exact time as its title; static/js/times.js keeps the words current."""
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
    if all(visible_lines(text) == text for text in texts):  # a line feed is layout, not hidden
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
<details class="list-tools" id="list-tools" open><summary>Search, filter and select several</summary>
{filter_bar("/", filters)}
{_batch_bar()}</details>
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


def ran_text(request: ApprovalRequest, events: Sequence[Event]) -> str:
    """Whether the call ran: from the adapter's outcome event (``ran`` or ``not_run``), else what the decision
    implies; ``no outcome yet`` for an approval the agent got whose outcome is not recorded (yet)."""
    outcomes = [ev for ev in events if is_outcome(ev)]
    if outcomes:
        return "yes" if event_kind(outcomes[-1]) == EventKind.RAN else "no"
    resolution = request.resolution()
    if resolution is not None and resolution.kind in (DecisionKind.REJECT, DecisionKind.RESPOND):
        return "no"
    return "no outcome yet" if request.applied_at else "not yet"


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
            f'<td><a href="/requests/{e(request.id)}">{e(request.call.tool)}</a><br><code class="args">{marked(compact_args(request.call.args, 60))}</code></td>'
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
<div id="history" class="table-wrap">{table}</div>{pager}"""


RUN_VIEWS = {
    "open": ("Waiting and failed", (ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING, ParkedRunStatus.FAILED)),
    "failed": ("Failed", (ParkedRunStatus.FAILED,)),
    "resumed": ("Resumed", (ParkedRunStatus.RESUMED,)),
}
"""The runs page's views: ``?view=`` to the statuses it lists."""


def runs_page(
    runs: Sequence[tuple[ParkedRun, Sequence[ApprovalRequest]]], view: str, *, notice: str | None = None
) -> str:
    """Parked runs with their requests, resume attempts, lease and outcome; failed ones can be retried."""
    tabs = "".join(
        f'<a href="/runs?view={key}" class="{"active" if key == view else ""}">{e(label)}</a>'
        for key, (label, _) in RUN_VIEWS.items()
    )
    rows = "".join(_run_row(parked, requests) for parked, requests in runs)
    table = (
        '<table class="runs"><thead><tr><th>Run</th><th>Status</th><th>Requests</th><th>Attempts</th>'
        f"<th>Outcome</th><th>Updated</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else '<p class="empty">No parked runs here.</p>'
    )
    said = f'<p class="notice" id="runs-notice" role="status">{e(notice)}</p>' if notice else ""
    return f"""<section class="intro"><h1>Runs</h1>
<p class="muted">Paused SDK runs that crossgate keeps until their requests are decided, and their resumes.
A worker (<code>crossgate worker</code>) or the adapter's <code>resume</code> takes a run forward once.</p></section>
{said}<nav class="subnav">{tabs}</nav><div id="runs" class="table-wrap">{table}</div>"""


def _run_row(parked: ParkedRun, requests: Sequence[ApprovalRequest]) -> str:
    links = "".join(
        f'<li><a href="/requests/{e(r.id)}">{e(r.call.tool)}</a> <span class="pill pill-{e(r.status.value)}">{e(r.status.value)}</span></li>'
        for r in requests
    )
    lease = (
        f'<br><span class="muted">leased by {e(parked.lease_owner)}</span>'
        if parked.status is ParkedRunStatus.RESUMING and parked.lease_owner
        else ""
    )
    if parked.status is ParkedRunStatus.FAILED and parked.state:
        action = f'<form method="post" action="/runs/{e(parked.id)}/retry"><button class="primary retry" type="submit">Retry</button></form>'
    elif parked.status is ParkedRunStatus.FAILED:
        action = '<span class="muted">state pruned</span>'
    else:
        action = ""
    return (
        f'<tr data-id="{e(parked.id)}" class="run-{e(parked.status.value)}"><td>{framework_badge(parked.framework)}<br>'
        f'<code>{e(parked.run)}</code><br><code class="muted">{e(parked.id)}</code></td>'
        f'<td><span class="pill pill-run-{e(parked.status.value)}">{e(parked.status.value)}</span>{lease}</td>'
        f'<td><ul class="run-requests">{links}</ul></td><td>{parked.attempts}</td>'
        f'<td class="outcome">{e(parked.outcome or "")}</td><td>{when_short(parked.updated_at)}</td><td>{action}</td></tr>'
    )

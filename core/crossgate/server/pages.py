"""The reviewer web page: server-rendered HTML; the ES modules in ``static/js/`` add live updates and the forms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar
from urllib.parse import parse_qs, quote

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from crossgate.model import ApprovalRequest, Event, ParkedRun, ParkedRunStatus
from crossgate.server import listing, listviews, views
from crossgate.server.access import COOKIE, Caller, decide_blocked, require_scope
from crossgate.server.sessions import SESSION_SECONDS
from crossgate.server.state import ServerState, server_state

T = TypeVar("T")
router = APIRouter(include_in_schema=False)


def wants_html(request: Request) -> bool:
    """True for the page's own routes (errors there render as HTML)."""
    path = request.url.path
    return not path.startswith(("/api/", "/static/")) and path != "/api"


def error_page(request: Request, status: int, message: str) -> Response:
    """An error on a page: sign in again for 401, else a calm message with the status code."""
    if status == 401 and request.method == "GET" and not request.url.path.startswith("/links/"):
        return RedirectResponse("/login", status_code=303)
    title = {401: "Sign in needed", 403: "Not allowed", 404: "Not found", 409: "Already settled", 410: "Link expired"}
    body = views.message_page(title.get(status, "Something went wrong"), message, status_class=f"status-{status}")
    return _html(request, title.get(status, "Error"), body, page="error", reviewer=None, status=status)


def _html(
    request: Request,
    title: str,
    body: str,
    *,
    page: str,
    reviewer: str | None,
    status: int = 200,
    head: int | None = None,
) -> HTMLResponse:
    app_title = server_state(request).settings.title
    html = views.layout(title, body, page=page, reviewer=reviewer, app_title=app_title, head=head)
    return HTMLResponse(html, status_code=status)


async def _head(request: Request) -> int:
    """The event log's head, read before a page's data (see ``views.layout``)."""
    return (await _run(server_state(request).queue.store.audit_head))[0]


def _caller(request: Request) -> Caller:
    return server_state(request).auth.caller(request)


async def _run(func: Callable[..., T], *args: object) -> T:
    return await anyio.to_thread.run_sync(func, *args)


def _filters(request: Request) -> listing.Filters:
    return listing.Filters.from_query(request.query_params)


@router.get("/", response_class=HTMLResponse)
async def pending_page(request: Request) -> Response:
    caller = _caller(request)
    head = await _head(request)
    filters = _filters(request)
    requests = await _run(listing.pending, server_state(request).queue, filters)
    body = listviews.pending_page(requests, _blocked(caller, requests), filters)
    return _html(request, "Pending", body, page="pending", reviewer=caller.reviewer.name, head=head)


@router.get("/partials/pending", response_class=HTMLResponse)
async def pending_fragment(request: Request) -> Response:
    caller = _caller(request)
    filters = _filters(request)
    requests = await _run(listing.pending, server_state(request).queue, filters)
    return HTMLResponse(listviews.pending_list(requests, _blocked(caller, requests), filters))


def _blocked(caller: Caller, requests: Sequence[ApprovalRequest]) -> dict[str, str]:
    """Why the caller may not decide each of ``requests`` that they may not (scope, self-decision)."""
    return {r.id: reason for r in requests if (reason := decide_blocked(caller.reviewer, r)) is not None}


@router.get("/requests/{request_id}", response_class=HTMLResponse)
async def request_page(request_id: str, request: Request) -> Response:
    caller = _caller(request)
    queue = server_state(request).queue
    head = await _head(request)
    found = await _run(queue.get, request_id)
    events = await anyio.to_thread.run_sync(lambda: queue.events(request_id=request_id))
    blocked = decide_blocked(caller.reviewer, found)
    denial = await _run(queue.policy_denial, found) if found.is_open and blocked is None else None
    body = views.request_page(found, events, blocked=blocked, denial=denial)
    return _html(request, found.call.tool, body, page="request", reviewer=caller.reviewer.name, head=head)


def _history_rows(
    state: ServerState, filters: listing.Filters, cursor: str | None
) -> tuple[list[tuple[ApprovalRequest, Sequence[Event]]], str | None, bool, str]:
    queue = state.queue
    page = listing.history(queue, filters, cursor)
    rows: list[tuple[ApprovalRequest, Sequence[Event]]] = [(r, queue.events(request_id=r.id)) for r in page.items]
    report = queue.verify_audit()
    text = (
        f"Audit chain intact: {report.checked} events verified."
        if report.ok
        else f"Audit chain broken: {report.problem}."
    )
    return rows, page.next_cursor, report.ok, text


@router.get("/history", response_class=HTMLResponse)
async def history_page(request: Request, cursor: str | None = None) -> Response:
    caller = _caller(request)
    head = await _head(request)
    filters = _filters(request)
    rows, older, ok, text = await _run(_history_rows, server_state(request), filters, cursor or None)
    body = listviews.history_page(rows, ok, text, filters=filters, older=older, paged=bool(cursor))
    return _html(request, "History", body, page="history", reviewer=caller.reviewer.name, head=head)


@router.get("/rules", response_class=HTMLResponse)
async def rules_page(request: Request) -> Response:
    caller = _caller(request)
    head = await _head(request)
    rules = await anyio.to_thread.run_sync(lambda: server_state(request).queue.rules(include_revoked=True))
    body = views.rules_page(rules)
    return _html(request, "Standing rules", body, page="rules", reviewer=caller.reviewer.name, head=head)


def _runs(state: ServerState, statuses: tuple[ParkedRunStatus, ...]) -> list[tuple[ParkedRun, list[ApprovalRequest]]]:
    queue = state.queue
    runs = queue.parked_runs(statuses=statuses)
    return [(p, [queue.get(r) for r in p.request_ids]) for p in reversed(runs)]  # newest first


@router.get("/runs", response_class=HTMLResponse)
async def runs_page(request: Request, view: str = "open", retried: str | None = None) -> Response:
    caller = _caller(request)
    head = await _head(request)
    view = view if view in listviews.RUN_VIEWS else "open"
    runs = await _run(_runs, server_state(request), listviews.RUN_VIEWS[view][1])
    notice = f"Run {retried} is offered for resuming again; a worker takes it as any ready run." if retried else None
    body = listviews.runs_page(runs, view, notice=notice)
    return _html(request, "Runs", body, page="runs", reviewer=caller.reviewer.name, head=head)


@router.post("/runs/{parked_id}/retry")
async def retry_run(parked_id: str, request: Request) -> Response:
    """Offer a failed run for resuming again (as ``crossgate runs retry``); only within the reviewer's scope."""
    caller = _caller(request)
    queue = server_state(request).queue

    def retry() -> None:
        parked = queue.get_parked(parked_id)
        for request_id in parked.request_ids:
            require_scope(caller.reviewer, queue.get(request_id))
        queue.retry_parked(parked_id, actor=caller.reviewer.name)

    await _run(retry)
    return RedirectResponse(f"/runs?view=open&retried={quote(parked_id)}", status_code=303)


def _login_refused(request: Request) -> Response:
    body = views.login_page("That token belongs to no reviewer, or that sign-in address was used already.")
    return _html(request, "Sign in", body, page="login", reviewer=None, status=401)


def _signed_in(request: Request, secret: str) -> Response:
    """Exchange a token or a one-time code for a session: the cookie holds the session id, not the token."""
    session = server_state(request).auth.sign_in(secret)
    if session is None:
        return _login_refused(request)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/", max_age=SESSION_SECONDS)
    return response


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, token: str | None = None) -> Response:
    """The sign-in form; ``?token=`` signs in at once (the one-time address ``crossgate serve`` prints)."""
    if token is not None:
        return _signed_in(request, token.strip())
    return _html(request, "Sign in", views.login_page(), page="login", reviewer=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    return _signed_in(request, token) if token else _login_refused(request)


@router.post("/logout")
async def logout(request: Request) -> Response:
    if session := request.cookies.get(COOKIE):
        server_state(request).auth.sign_out(session)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response

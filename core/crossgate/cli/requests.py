"""Commands on requests: submit, list, show, cancel, expire."""

from __future__ import annotations

from typing import Annotated

import typer

from crossgate.cli.context import queue_of
from crossgate.cli.deciding import ServerOpt, TokenFileOpt, local_only, reviewer_backend
from crossgate.cli.exit_codes import DENIED
from crossgate.cli.ids import RequestId, request_id
from crossgate.cli.options import JsonFlag, Reviewer, StatusFilter, check_cursor, json_args, validated
from crossgate.cli.output import (
    list_json,
    outcome_json,
    print_json,
    print_request,
    print_requests,
    print_verdict,
    request_json,
    say,
    submission_json,
)
from crossgate.model import CANCEL_MESSAGE, RequestStatus, ToolCall, VerdictKind
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery


def submit(
    ctx: typer.Context,
    framework: Annotated[str, typer.Option("--framework", metavar="NAME", help="The SDK proposing the call.")],
    tool: Annotated[str, typer.Option("--tool", metavar="NAME", help="The tool's name.")],
    args: Annotated[str, typer.Option("--args", metavar="JSON", help="The arguments, a JSON object.")] = "{}",
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="The agent proposing the call.")] = None,
    run: Annotated[str | None, typer.Option("--run", metavar="RUN", help="The SDK-side run handle.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="SESSION", help="The conversation the run belongs to.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Submit a tool call: print the new pending request, or the policy's allow or deny (exit 6).

    Works on a local database only: an agent submits to a review server with its agent token.
    """
    local_only(ctx, "submit", "an agent submits to a review server with its agent token")
    parsed = json_args(args)
    call = validated(
        lambda: ToolCall(framework=framework, tool=tool, args=parsed, agent=agent, run=run, session=session),
        "tool call",
    )
    submission = queue_of(ctx).submit(call)
    if as_json:
        fields = {"framework": call.framework, "tool": call.tool, "args": call.args, "fingerprint": call.fingerprint}
        print_json(submission_json(submission, fields))
    elif submission.request is not None:
        print_request(submission.request)
    else:
        print_verdict(submission.verdict)
    if submission.verdict.kind is VerdictKind.DENY:
        raise typer.Exit(DENIED)  # a script must not read a denied call as accepted


def list_requests(
    ctx: typer.Context,
    status: Annotated[StatusFilter, typer.Option("--status", help="Which requests to show.")] = StatusFilter.PENDING,
    framework: Annotated[str | None, typer.Option("--framework", metavar="NAME", help="Only this framework.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", metavar="NAME", help="Only this tool.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="Only this agent.")] = None,
    run: Annotated[str | None, typer.Option("--run", metavar="RUN", help="Only this run.")] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", min=1, max=MAX_PAGE_SIZE, help="Page size.")] = 50,
    cursor: Annotated[
        str | None,
        typer.Option("--cursor", metavar="CURSOR", callback=check_cursor, help="Where the previous page ended."),
    ] = None,
    oldest_first: Annotated[bool, typer.Option("--oldest-first", help="Oldest first (default: newest).")] = False,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """List requests, newest first, one page at a time."""
    statuses = () if status is StatusFilter.ALL else (RequestStatus(status.value),)
    query = RequestQuery(
        statuses=statuses,
        framework=framework,
        tool=tool,
        agent=agent,
        run=run,
        newest_first=not oldest_first,
        limit=limit,
        cursor=cursor,
    )
    page = reviewer_backend(ctx, "list", server=server, token_file=token_file, reviewer=None).list_requests(query)
    if as_json:
        print_json(list_json([request_json(r) for r in page.items], page.next_cursor))
    else:
        print_requests(page.items, page.next_cursor)


def show(
    ctx: typer.Context,
    given: RequestId,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one request: the call, its fingerprint, what was decided, and whether the call ran."""
    backend = reviewer_backend(ctx, "show", server=server, token_file=token_file, reviewer=None)
    request = backend.get(request_id(backend, given))
    approvers = backend.approvers(request.id) if request.approvals_required > 1 else None
    outcome = backend.outcome(request.id) if request.is_applied else None
    if as_json:
        # Keys that only some requests have: the approvers where several must approve, the outcome (null
        # while none is recorded) once the decision reached the agent.
        extra = ({"outcome": outcome_json(outcome)} if request.is_applied else {}) | (
            {} if approvers is None else {"approvers": approvers}
        )
        print_json(request_json(request) | extra)
    else:
        print_request(request, approvers=approvers, outcome=outcome)


def cancel(
    ctx: typer.Context,
    given: RequestId,
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="What the model reads.")] = CANCEL_MESSAGE,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Close a pending request without a decision; the SDK gets a rejection."""
    backend = reviewer_backend(ctx, "cancel", server=server, token_file=token_file, reviewer=reviewer)
    closed = backend.cancel(request_id(backend, given), reason=reason)
    if as_json:
        print_json(request_json(closed))
    else:
        say(f"cancelled {closed.id}")


def expire(
    ctx: typer.Context, server: ServerOpt = None, token_file: TokenFileOpt = None, as_json: JsonFlag = False
) -> None:
    """Close every pending request past its expiry (on a review server: with an admin's token)."""
    expired = reviewer_backend(ctx, "expire", server=server, token_file=token_file, reviewer=None).expire_overdue()
    if as_json:
        print_json(list_json([request_json(r) for r in expired]))
        return
    for request in expired:
        say(f"expired {request.id} ({request.call.tool})")
    say(f"{len(expired)} request{'s' if len(expired) != 1 else ''} expired")


def register(app: typer.Typer) -> None:
    """Add the request commands to ``app``."""
    app.command("submit")(submit)
    app.command("list")(list_requests)
    app.command("show")(show)
    app.command("cancel")(cancel)
    app.command("expire")(expire)

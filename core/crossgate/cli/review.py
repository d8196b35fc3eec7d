"""``crossgate review``: walk the pending requests one at a time, oldest first, and decide each.

Each request is shown as ``crossgate show`` shows it, then one key: ``a`` approve, ``e`` edit (asks for
the arguments), ``r`` reject (asks for the message the model reads), ``s`` skip, ``q`` quit. Decisions go
through the same code as ``crossgate approve|edit|reject`` (the queue's checks: allowed decisions, the
policy again, self-decision, arguments schema), so a refusal is one line and the walk goes on. A request
decided elsewhere meanwhile is passed over. End of input is ``q``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated

import typer

from crossgate.cli.backend import ReviewerBackend
from crossgate.cli.decide import say_decided
from crossgate.cli.deciding import AuthorityDirOpt, ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.exit_codes import OK, exit_code_for, one_line
from crossgate.cli.options import Note, Reviewer, json_args, validated
from crossgate.cli.output import print_request, say
from crossgate.decisions import AnyDecision
from crossgate.display import visible
from crossgate.errors import CrossgateError, InvalidDecisionError
from crossgate.model import ApprovalRequest, Approve, Edit, Reject, RequestStatus
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery

KEYS = {"a": "approve", "e": "edit", "r": "reject", "s": "skip", "q": "quit"}
PROMPT = "[a]pprove, [e]dit, [r]eject, [s]kip, [q]uit"
DONE = {"approve": "approved", "edit": "edited", "reject": "rejected", "skip": "skipped"}


class _Quit(Exception):
    """The reviewer pressed q, or the input ended."""


def _ask(text: str, default: str | None = None) -> str:
    try:
        answer: str = typer.prompt(text, default=default, show_default=default is not None)
    except typer.Abort:  # end of input (or Ctrl-D): stop the walk cleanly
        raise _Quit from None
    return answer


def _pending(backend: ReviewerBackend, tool: str | None, framework: str | None) -> list[str]:
    query = RequestQuery(
        statuses=(RequestStatus.PENDING,), tool=tool, framework=framework, newest_first=False, limit=MAX_PAGE_SIZE
    )
    return [r.id for r in backend.list_requests(query).items]


def _decision(request: ApprovalRequest, note: str | None) -> AnyDecision | None:
    """Ask for a key (and the edit's arguments or the rejection's message); None for skip."""
    while True:
        key = _ask(PROMPT).strip().lower()[:1]
        if key == "q":
            raise _Quit
        if key == "s":
            return None
        if key == "a":
            return validated(partial(Approve, note=note), "decision", decision=True)
        if key == "e":
            raw = _ask("arguments (JSON)", default=json.dumps(request.call.args, ensure_ascii=False))
            parsed = json_args(raw, option="arguments")
            return validated(partial(Edit, args=parsed, note=note), "decision", decision=True)
        if key == "r":
            message = _ask("message for the model").strip()
            if not message:
                raise InvalidDecisionError("a rejection needs a message: it is what the model reads")
            return validated(partial(Reject, message=message, note=note), "decision", decision=True)
        say(f"type one of {', '.join(KEYS)}")


def review(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option("--tool", metavar="NAME", help="Only this tool's requests.")] = None,
    framework: Annotated[str | None, typer.Option("--framework", metavar="NAME", help="Only this framework.")] = None,
    note: Note = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
) -> None:
    """Walk the pending requests, oldest first: show each, then approve, edit, reject, skip or quit.

    It decides through the review server with a reviewer token, or on the local database with the
    authority's signing key, as an operator.
    """
    deciding = reviewer_backend(
        ctx,
        "review",
        server=server,
        token_file=token_file,
        reviewer=reviewer,
        authority_dir=authority_dir,
        decides=True,
    )
    ids = _pending(deciding, tool, framework)
    if not ids:
        say("no pending requests")
        return
    counts = {"approve": 0, "edit": 0, "reject": 0, "skip": 0}
    exit_code = OK
    try:
        for position, request_id in enumerate(ids, start=1):
            request = deciding.get(request_id)
            if request.status is not RequestStatus.PENDING:
                say(f"{request.id} was {request.status.value} meanwhile; passed over")
                continue
            say(f"-- {position} of {len(ids)}")
            print_request(request)
            try:
                decision = _decision(request, note)
                if decision is None:
                    counts["skip"] += 1
                    continue
                decided, remembered = deciding.decide(request.id, decision)
            except CrossgateError as exc:  # the same refusal the decide commands print; the walk goes on
                exit_code = exit_code or exit_code_for(exc)
                message = str(exc) or type(exc).__name__
                typer.echo(f"crossgate: error: {visible(request.id)}: {visible(one_line(message))}", err=True)
                continue
            counts[decision.kind.value] += 1
            say_decided(deciding, decided, remembered)
    except _Quit:
        pass
    say(", ".join(f"{n} {DONE[kind]}" for kind, n in counts.items()))
    if exit_code != OK:
        raise typer.Exit(exit_code)


def register(app: typer.Typer) -> None:
    """Add ``review`` to ``app``."""
    app.command("review")(review)

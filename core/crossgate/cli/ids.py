"""Ids on the command line: a full id, or a prefix of exactly one (``crossgate approve req_lg_3222``).

Every command that takes a request, standing rule or parked run id resolves it here, through the
argument types below, before the command runs. An id that exists is taken as it is; otherwise a prefix
that matches one id stands for it, and a prefix that matches several is a usage error (exit 2) that lists
them, so nothing is decided on a guess. A prefix that matches nothing is left as given: the command then
reports "no request with id …" as it always did. Only an id that is not found exactly is looked up as a
prefix, which reads the ids of every request (a page at a time): instant for a full id, linear for a start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

import typer

from crossgate.cli.context import CliContext
from crossgate.errors import NotFoundError
from crossgate.queue import ReviewQueue
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery

SHOWN = 5
"""How many candidates an ambiguous prefix lists before '…'."""


def _request_ids(queue: ReviewQueue) -> Iterator[str]:
    cursor: str | None = None
    while True:
        page = queue.list_requests(RequestQuery(statuses=(), limit=MAX_PAGE_SIZE, cursor=cursor))
        yield from (r.id for r in page.items)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _exists(lookup: Callable[[str], object], given: str) -> bool:
    try:
        lookup(given)
    except NotFoundError:
        return False
    return True


def resolve(given: str, *, exists: Callable[[str], bool], ids: Callable[[], Iterator[str]], what: str) -> str:
    """The one id ``given`` names: itself if it exists, else the only id it is a prefix of."""
    if not given or exists(given):
        return given
    matches = sorted(i for i in ids() if i.startswith(given))
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = ", ".join(matches[:SHOWN]) + (", …" if len(matches) > SHOWN else "")
        raise typer.BadParameter(f"{given!r} is the start of {len(matches)} {what} ids: {listed}; give more of it")
    return given


def request_id(queue: ReviewQueue, given: str) -> str:
    """A request id, or the unique request id ``given`` starts."""
    return resolve(given, exists=lambda i: _exists(queue.get, i), ids=lambda: _request_ids(queue), what="request")


def rule_id(queue: ReviewQueue, given: str) -> str:
    """A standing rule id (revoked ones included), or the unique one ``given`` starts."""

    def ids() -> Iterator[str]:
        return (r.id for r in queue.rules(include_revoked=True))

    return resolve(given, exists=lambda i: any(r == i for r in ids()), ids=ids, what="standing rule")


def parked_id(queue: ReviewQueue, given: str) -> str:
    """A parked run id, or the unique one ``given`` starts."""
    return resolve(
        given,
        exists=lambda i: _exists(queue.get_parked, i),
        ids=lambda: (p.id for p in queue.parked_runs()),
        what="parked run",
    )


def _queue(ctx: typer.Context) -> ReviewQueue:
    return ctx.ensure_object(CliContext).open_queue()


def _one(resolver: Callable[[ReviewQueue, str], str]) -> Callable[[typer.Context, str | None], str | None]:
    def callback(ctx: typer.Context, value: str | None) -> str | None:
        return None if value is None or ctx.resilient_parsing else resolver(_queue(ctx), value)

    return callback


def _each(ctx: typer.Context, values: list[str] | None) -> list[str] | None:
    if not values or ctx.resilient_parsing:
        return values
    queue = _queue(ctx)
    return [request_id(queue, v) for v in values]


RequestId = Annotated[
    str, typer.Argument(metavar="ID", callback=_one(request_id), help="The request's id or its start.")
]
RequestIds = Annotated[
    list[str],
    typer.Argument(
        metavar="ID",
        callback=_each,
        help="The request's id (or its start); give several to decide each on its own with the same options.",
    ),
]
RuleId = Annotated[
    str, typer.Argument(metavar="ID", callback=_one(rule_id), help="The standing rule's id or its start.")
]
ParkedId = Annotated[
    str, typer.Argument(metavar="ID", callback=_one(parked_id), help="The parked run's id (park_…) or its start.")
]
RequestOption = Annotated[
    str | None,
    typer.Option("--request", metavar="ID", callback=_one(request_id), help="Only this request's events."),
]

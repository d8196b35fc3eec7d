"""Ids on the command line: a full id, or a prefix of exactly one (``crossgate approve req_lg_3222``).

Every command that takes a request, standing rule or parked run id resolves it here, on the backend it
works against (the local database or a review server). An id that exists is taken as it is; otherwise a prefix
that matches one id stands for it, and a prefix that matches several is a usage error (exit 2) that lists
them, so nothing is decided on a guess. A prefix that matches nothing is left as given: the command then
reports "no request with id …" as it always did. Only an id that is not found exactly is looked up as a
prefix, which reads the ids of every request (a page at a time): instant for a full id, linear for a start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

import typer

from crossgate.cli.backend import ReviewerBackend
from crossgate.errors import NotFoundError
from crossgate.model import ParkedRunStatus
from crossgate.stores import MAX_PAGE_SIZE, RequestQuery

SHOWN = 5
"""How many candidates an ambiguous prefix lists before '…'."""


def _request_ids(backend: ReviewerBackend) -> Iterator[str]:
    cursor: str | None = None
    while True:
        page = backend.list_requests(RequestQuery(statuses=(), limit=MAX_PAGE_SIZE, cursor=cursor))
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


def request_id(backend: ReviewerBackend, given: str) -> str:
    """A request id, or the unique request id ``given`` starts."""
    return resolve(given, exists=lambda i: _exists(backend.get, i), ids=lambda: _request_ids(backend), what="request")


def rule_id(backend: ReviewerBackend, given: str) -> str:
    """A standing rule id (revoked ones included), or the unique one ``given`` starts."""

    def ids() -> Iterator[str]:
        return (r.id for r in backend.rules(include_revoked=True))

    return resolve(given, exists=lambda i: any(r == i for r in ids()), ids=ids, what="standing rule")


def parked_id(backend: ReviewerBackend, given: str) -> str:
    """A parked run id, or the unique one ``given`` starts."""
    return resolve(
        given,
        exists=lambda i: _exists(backend.run_detail, i),
        ids=lambda: (p.id for p in backend.parked_runs(statuses=tuple(ParkedRunStatus), framework=None)),
        what="parked run",
    )


RequestId = Annotated[str, typer.Argument(metavar="ID", help="The request's id or its start.")]
RuleId = Annotated[str, typer.Argument(metavar="ID", help="The standing rule's id or its start.")]
ParkedId = Annotated[str, typer.Argument(metavar="ID", help="The parked run's id (park_…) or its start.")]
RequestOption = Annotated[str | None, typer.Option("--request", metavar="ID", help="Only this request's events.")]

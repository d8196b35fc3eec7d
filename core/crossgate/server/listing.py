"""What the page's lists show: search and filters from the query string, and History's pages.

Framework, tool, agent and run are exact matches the store answers; requester and the search text
are checked here, on the requests the store gives, so the lists need nothing the API does not have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from urllib.parse import urlencode

from crossgate.model import ApprovalRequest, RequestStatus
from crossgate.queue import ReviewQueue
from crossgate.stores.base import RequestQuery

HISTORY_ROWS = 100
CLOSED = tuple(s for s in RequestStatus if s is not RequestStatus.PENDING)
_SCAN_PAGES = 20
"""Store pages of 500 History reads at most to fill one page of matches; then it offers the next page."""


@dataclass(frozen=True, slots=True)
class Filters:
    """The list filters a reviewer set; empty strings mean no filter."""

    q: str = ""
    framework: str = ""
    tool: str = ""
    agent: str = ""
    run: str = ""
    requester: str = ""

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> Filters:
        """The filters in a page's query string (unknown parameters are ignored)."""
        return cls(**{f.name: params.get(f.name, "").strip()[:200] for f in fields(cls)})

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def query_string(self, **extra: str) -> str:
        """The filters (and ``extra``) as a query string, ``?…`` or empty."""
        pairs = {f.name: getattr(self, f.name) for f in fields(self)} | extra
        text = urlencode({k: v for k, v in pairs.items() if v})
        return f"?{text}" if text else ""

    def store_query(self, statuses: tuple[RequestStatus, ...], *, limit: int, cursor: str | None) -> RequestQuery:
        """The part of the filters the store matches."""
        return RequestQuery(
            statuses=statuses,
            framework=self.framework or None,
            tool=self.tool or None,
            agent=self.agent or None,
            run=self.run or None,
            limit=limit,
            cursor=cursor,
        )

    def matches(self, request: ApprovalRequest) -> bool:
        """Whether ``request`` passes the requester filter and the search text."""
        if self.requester and (request.requested_by or "") != self.requester:
            return False
        if not self.q:
            return True
        call = request.call
        haystack = [request.id, call.framework, call.tool, call.agent or "", call.run or "", call.call_id or ""]
        haystack += [request.requested_by or "", request.reason, json.dumps(call.args, ensure_ascii=False)]
        needle = self.q.casefold()
        return any(needle in text.casefold() for text in haystack)


def pending(queue: ReviewQueue, filters: Filters) -> list[ApprovalRequest]:
    """The pending requests that pass ``filters``, oldest first."""
    found = queue.pending(
        framework=filters.framework or None,
        tool=filters.tool or None,
        agent=filters.agent or None,
        run=filters.run or None,
    )
    return [r for r in found if filters.matches(r)]


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Up to :data:`HISTORY_ROWS` closed requests, newest first, and the cursor of the next page."""

    items: list[ApprovalRequest]
    next_cursor: str | None


def history(queue: ReviewQueue, filters: Filters, cursor: str | None = None) -> HistoryPage:
    """One page of closed requests that pass ``filters``, starting at ``cursor``."""
    found: list[ApprovalRequest] = []
    for _ in range(_SCAN_PAGES):
        limit = HISTORY_ROWS if not (filters.q or filters.requester) else 500
        page = queue.list_requests(filters.store_query(CLOSED, limit=limit, cursor=cursor))
        for index, request in enumerate(page.items):
            if filters.matches(request):
                found.append(request)
                if len(found) == HISTORY_ROWS:
                    more = index + 1 < len(page.items) or page.next_cursor is not None
                    return HistoryPage(found, _resume(queue, filters, cursor, index + 1) if more else None)
        cursor = page.next_cursor
        if cursor is None:
            return HistoryPage(found, None)
    return HistoryPage(found, cursor)


def _resume(queue: ReviewQueue, filters: Filters, cursor: str | None, consumed: int) -> str | None:
    """The cursor right after the first ``consumed`` requests of the store page at ``cursor``."""
    if consumed == 0:
        return cursor
    page = queue.list_requests(filters.store_query(CLOSED, limit=consumed, cursor=cursor))
    return page.next_cursor

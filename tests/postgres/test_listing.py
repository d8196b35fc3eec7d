"""Listing stays an index range scan: a page of pending requests costs the same with many requests stored."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import psycopg
import pytest

from crossgate import ApprovalRequest, RequestQuery, RequestStatus, ToolCall
from crossgate.stores.postgres import PostgresStore, list_statement

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

STORED = 50_000
PENDING = 60
"""The oldest requests are the only pending ones: a plan that walks positions and filters reads them all,
and one that collects every pending request and sorts it costs in proportion to the backlog."""


def _bulk_load(store: PostgresStore) -> None:
    call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": "t1"})
    template = ApprovalRequest(id="REQ", call=call, fingerprint=call.fingerprint, created_at=datetime.now(UTC))
    bodies = {
        status: template.model_copy(update={"status": status}).model_dump_json()
        for status in (RequestStatus.PENDING, RequestStatus.APPLIED)
    }
    with psycopg.connect(store._conninfo, options=f"-c search_path={store.schema}") as conn:
        with (
            conn.cursor() as cur,
            cur.copy("COPY requests (id, position, status, framework, tool, run, data) FROM STDIN") as copy,
        ):
            for i in range(1, STORED + 1):
                status = RequestStatus.PENDING if i <= PENDING else RequestStatus.APPLIED
                request_id = f"req_{i:08d}"
                copy.write_row(
                    (
                        request_id,
                        i,
                        status.value,
                        "langgraph",
                        "delete_ticket",
                        None,
                        bodies[status].replace('"REQ"', f'"{request_id}"'),
                    )
                )
        conn.execute("UPDATE audit_head SET seq = %s", (STORED,))
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE requests")


def _plan(store: PostgresStore, query: RequestQuery) -> str:
    statement, params = list_statement(query)
    with psycopg.connect(store._conninfo, autocommit=True, options=f"-c search_path={store.schema}") as conn:
        explain = psycopg.sql.SQL("EXPLAIN ") + statement
        return "\n".join(row[0] for row in conn.execute(explain, params))


def test_a_page_of_pending_requests_reads_the_status_index_and_takes_under_20_ms(pg_store: PostgresStore) -> None:
    _bulk_load(pg_store)
    inbox = RequestQuery(statuses=(RequestStatus.PENDING,), limit=50)
    newest = _plan(pg_store, inbox)
    assert "Index Scan Backward using requests_status_position" in newest and "Sort" not in newest, newest
    assert "requests_status_position" in _plan(
        pg_store, RequestQuery(statuses=(RequestStatus.PENDING,), newest_first=False)
    )

    timings = []
    for _ in range(20):
        started = time.perf_counter()
        page = pg_store.list_requests(inbox)
        timings.append(time.perf_counter() - started)
    assert [r.id for r in page.items] == [f"req_{i:08d}" for i in range(PENDING, PENDING - 50, -1)]
    rest = pg_store.list_requests(RequestQuery(statuses=(RequestStatus.PENDING,), limit=50, cursor=page.next_cursor))
    assert [r.id for r in rest.items] == [f"req_{i:08d}" for i in range(PENDING - 50, 0, -1)]
    assert rest.next_cursor is None
    assert sorted(timings)[len(timings) // 2] < 0.020, timings

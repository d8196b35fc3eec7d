"""The bare baseline of ``bench_server``: a FastAPI app on uvicorn doing what a decision must do, and no more.

    python -m tests.benchmarks.bare_server DB PORT TOKENS

The same two routes the reviewers call (list pending oldest first, optionally one run's, post a decision)
over one table: a decision is one durable compare-and-set ``UPDATE ... WHERE status = 'pending'`` (200,
or 409 when another reviewer was first), behind a bearer-token check. No policy, no audit log, no schema
validation beyond the JSON body. ``DB`` is a SQLite file (WAL, ``synchronous=FULL``; the app's threads
queue on one write lock, as crossgate's SQLite store does) or a ``postgresql://`` URL with a ``schema``
parameter (each statement in autocommit with ``synchronous_commit`` on, the server's default; row locks,
no lock of the app's own). ``setup``, ``submit`` and ``apply_decided`` are the submitter's and the
appliers' side, on their own connections.

With ``CG_BENCH_BARE_BODIES=1`` (a measured variant, not the baseline) each row also holds the JSON body of a
request as crossgate's list returns it, and the list answers with those bodies: the same page size as
crossgate's, so the two differ by the work done and not by the bytes carried.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from typing import Any

import anyio
from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse, Response

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS requests (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " fingerprint TEXT NOT NULL, status TEXT NOT NULL, run TEXT, body TEXT)"
)
POSTGRES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS requests (position bigserial PRIMARY KEY, id text UNIQUE NOT NULL,"
    " fingerprint text NOT NULL, status text NOT NULL, run text, body text);"
    " CREATE INDEX IF NOT EXISTS requests_status_position ON requests (status, position)"
)
DECIDE = "UPDATE requests SET status = 'decided' WHERE id = ? AND fingerprint = ? AND status = 'pending'"
BODIES = os.environ.get("CG_BENCH_BARE_BODIES", "0") == "1"
"""The measured variant: rows carry crossgate-sized bodies, which the list returns."""
LIST = (
    "SELECT id, fingerprint, body FROM requests WHERE status = ? AND (CAST(? AS TEXT) IS NULL OR run = ?)"
    " ORDER BY position LIMIT ?"
)


class Db:
    """One connection to the bare table, SQLite or PostgreSQL, with ``?`` placeholders either way."""

    def __init__(self, target: str) -> None:
        self.postgres = target.startswith(("postgresql://", "postgres://"))
        if self.postgres:
            import psycopg

            from crossgate.stores.postgres import split_url

            conninfo, schema = split_url(target)
            self._pg = psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}")
            self._schema = schema
        else:
            self._lite = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=30)
            self._lite.execute("PRAGMA journal_mode=WAL")
            self._lite.execute("PRAGMA synchronous=FULL")

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> tuple[list[tuple[Any, ...]], int]:
        """The rows and the row count of one statement."""
        if self.postgres:
            cur = self._pg.execute(statement.replace("?", "%s"), params)
            return (list(cur.fetchall()) if cur.description else []), cur.rowcount
        found = self._lite.execute(statement, params)
        return found.fetchall(), found.rowcount

    def close(self) -> None:
        (self._pg if self.postgres else self._lite).close()


def connect(db: str) -> Db:
    return Db(db)


def setup(db: str) -> None:
    conn = Db(db)
    if conn.postgres:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {conn._schema}")
        conn.execute(POSTGRES_SCHEMA)
    else:
        conn.execute(SQLITE_SCHEMA)
    conn.close()


def submit(conn: Db, request_id: str, run: str | None = None, body: str | None = None) -> None:
    conn.execute(
        "INSERT INTO requests (id, fingerprint, status, run, body) VALUES (?, ?, 'pending', ?, ?)",
        (request_id, request_id, run, body),
    )


def pending_count(conn: Db) -> int:
    return int(conn.execute("SELECT count(*) FROM requests WHERE status = 'pending'")[0][0][0])


def apply_decided(conn: Db) -> tuple[int, int]:
    """Mark decided rows applied by compare-and-set; (applied, refused)."""
    rows, _ = conn.execute("SELECT id FROM requests WHERE status = 'decided' ORDER BY position LIMIT 100")
    applied = 0
    for (request_id,) in rows:
        applied += conn.execute(
            "UPDATE requests SET status = 'applied' WHERE id = ? AND status = 'decided'", (request_id,)
        )[1]
    return applied, len(rows) - applied


def app(db: str, tokens: set[str]) -> Any:
    local = threading.local()
    postgres = db.startswith(("postgresql://", "postgres://"))
    write_lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext() if postgres else threading.Lock()

    def conn() -> Db:
        found: Db | None = getattr(local, "conn", None)
        if found is None:
            found = local.conn = Db(db)
        return found

    def check(authorization: str | None) -> None:
        if authorization is None or authorization.removeprefix("Bearer ") not in tokens:
            raise HTTPException(401, "no token")

    api = FastAPI()

    @api.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/api/requests")
    def listing(status: str, limit: int = 20, run: str | None = None, authorization: str | None = Header(None)) -> Any:
        check(authorization)
        rows, _ = conn().execute(LIST, (status, run, run, limit))
        if BODIES:  # stored as the JSON they are sent as: joined, not parsed and serialised again
            page = '{"items":[' + ",".join(b for _, _, b in rows) + '],"next_cursor":null}'
            return Response(page, media_type="application/json")
        return {"items": [{"id": i, "fingerprint": f} for i, f, _ in rows], "next_cursor": None}

    @api.post("/api/requests/{request_id}/decision")
    async def decide(request_id: str, request: Request, authorization: str | None = Header(None)) -> JSONResponse:
        check(authorization)
        body = await request.json()
        if body.get("kind") != "approve":
            return JSONResponse({"error": "invalid", "message": "approve only", "status": 422}, status_code=422)
        return await run_in_thread(request_id, body.get("fingerprint"))

    async def run_in_thread(request_id: str, fingerprint: str | None) -> JSONResponse:
        def cas() -> int:
            with write_lock:
                return conn().execute(DECIDE, (request_id, fingerprint))[1]

        if await anyio.to_thread.run_sync(cas):
            return JSONResponse({"id": request_id, "status": "decided"})
        return JSONResponse({"error": "conflict", "message": "decided already", "status": 409}, status_code=409)

    return api


def main() -> None:
    """Serve the bare app on 127.0.0.1."""
    import uvicorn

    db, port, tokens = sys.argv[1], int(sys.argv[2]), set(sys.argv[3].split(","))
    uvicorn.run(app(db, tokens), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()

"""The bare baseline of ``bench_server``: a FastAPI app on uvicorn doing what a decision must do, and no more.

    python -m tests.benchmarks.bare_server DB PORT TOKENS

The same two routes the reviewers call (list pending oldest first, post a decision) over one SQLite file
in WAL mode with ``synchronous=FULL``: a decision is one durable compare-and-set ``UPDATE ... WHERE
status = 'pending'`` (200, or 409 when another reviewer was first), behind a bearer-token check. No
policy, no audit log, no schema validation beyond the JSON body. Threads of the app queue on one write
lock, as crossgate's SQLite store does. ``setup``, ``submit`` and ``apply`` are the submitter's and the
appliers' side, on their own connections.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from typing import Any

import anyio
from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS requests (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " fingerprint TEXT NOT NULL, status TEXT NOT NULL)"
)


DECIDE = "UPDATE requests SET status = 'decided' WHERE id = ? AND fingerprint = ? AND status = 'pending'"


def connect(db: str) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def setup(db: str) -> None:
    with connect(db) as conn:
        conn.execute(SCHEMA)


def submit(conn: sqlite3.Connection, request_id: str) -> None:
    conn.execute("INSERT INTO requests (id, fingerprint, status) VALUES (?, ?, 'pending')", (request_id, request_id))


def pending_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM requests WHERE status = 'pending'").fetchone()[0])


def apply_decided(conn: sqlite3.Connection) -> tuple[int, int]:
    """Mark decided rows applied by compare-and-set; (applied, refused)."""
    rows = conn.execute("SELECT id FROM requests WHERE status = 'decided' ORDER BY position LIMIT 100").fetchall()
    applied = 0
    for (request_id,) in rows:
        applied += conn.execute(
            "UPDATE requests SET status = 'applied' WHERE id = ? AND status = 'decided'", (request_id,)
        ).rowcount
    return applied, len(rows) - applied


def app(db: str, tokens: set[str]) -> Any:
    local = threading.local()
    write_lock = threading.Lock()

    def conn() -> sqlite3.Connection:
        found: sqlite3.Connection | None = getattr(local, "conn", None)
        if found is None:
            found = local.conn = connect(db)
        return found

    def check(authorization: str | None) -> None:
        if authorization is None or authorization.removeprefix("Bearer ") not in tokens:
            raise HTTPException(401, "no token")

    api = FastAPI()

    @api.get("/api/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/api/requests")
    def listing(status: str, limit: int = 20, authorization: str | None = Header(None)) -> dict[str, Any]:
        check(authorization)
        rows = (
            conn()
            .execute("SELECT id, fingerprint FROM requests WHERE status = ? ORDER BY position LIMIT ?", (status, limit))
            .fetchall()
        )
        return {"items": [{"id": i, "fingerprint": f} for i, f in rows], "next_cursor": None}

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
                return int(conn().execute(DECIDE, (request_id, fingerprint)).rowcount)

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

"""One real uvicorn on 127.0.0.1 over a SQLite file: the API, and the live stream fed by another process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from crossgate import ReviewQueue
from crossgate.server.app import create_app
from crossgate.stores import open_store
from tests.server.conftest import POLICY, auth, make_settings
from tests.server.live import live_server

pytestmark = pytest.mark.slow

SUBMIT = textwrap.dedent(
    """
    import sys
    from crossgate import ReviewQueue, ToolCall
    from crossgate.stores import open_store
    from tests.server.conftest import POLICY
    queue = ReviewQueue(open_store(sys.argv[1]), POLICY)
    call = ToolCall(framework="claude-agent-sdk", tool="delete_ticket", args={"id": "t7"}, run="other-process")
    print(queue.submit(call).request.id)
    queue.close()
    """
)


def read_events(stream: httpx.Response, count: int) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    event_id = None
    for line in stream.iter_lines():
        if line.startswith("id:"):
            event_id = line.removeprefix("id:").strip()
        if line.startswith("data:"):
            data = json.loads(line.removeprefix("data:"))
            assert str(data["seq"]) == event_id
            found.append(data)
            if len(found) == count:
                return found
    raise AssertionError(f"stream ended after {found}")


def test_stream_shows_changes_made_by_another_process(tmp_path: Path) -> None:
    db = str(tmp_path / "crossgate.db")
    queue = ReviewQueue(open_store(db), POLICY)
    app = create_app(queue, make_settings(sweep_seconds=0.1))
    with live_server(app) as base, httpx.Client(base_url=base, headers=auth("alice"), timeout=20) as http:
        assert http.get("/api/health").json()["store"] == "SqliteStore"
        with http.stream("GET", "/api/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            root = Path(__file__).resolve().parents[2]
            done = subprocess.run(
                [sys.executable, "-c", SUBMIT, db], cwd=root, capture_output=True, text=True, timeout=60, check=True
            )
            request_id = done.stdout.strip()
            (submitted,) = read_events(stream, 1)
        assert submitted["kind"] == "submitted"
        assert submitted["request_id"] == request_id
        assert submitted["framework"] == "claude-agent-sdk"
        decided = http.post(f"/api/requests/{request_id}/decision", json={"kind": "reject", "message": "not now"})
        assert decided.status_code == 200
        # a page that reconnects keeps its ?after= but sends Last-Event-ID: it gets only what it missed
        headers = {"Last-Event-ID": str(submitted["seq"])}
        with http.stream("GET", "/api/stream", params={"after": 0}, headers=headers) as again:
            (missed,) = read_events(again, 1)
        assert (missed["kind"], missed["actor"], missed["channel"], missed["decision"]) == (
            "decided",
            "alice",
            "api",
            "reject",
        )
        assert http.get("/api/audit/verify").json()["ok"] is True
        assert http.get("/api/requests/nope").status_code == 404
        assert http.get("/api/requests").status_code == 200
    queue.close()

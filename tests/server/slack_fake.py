"""A local fake of Slack's Web API on 127.0.0.1 that records every call, and Slack-signed interactions.

``WebClient(base_url=fake.url)`` talks to it through ``slack_sdk``'s own HTTP code. ``down`` makes every
call answer 503, as Slack does during an outage.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
CHANNEL = "C0REVIEWS"
SLACK_USERS = {"alice": "U0ALICE", "bob": "U0BOB", "lena": "U0LENA", "pat": "U0PAT"}


class FakeSlack:
    """Records Web API calls as (method, JSON body); answers like Slack, or 503 while ``down``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tokens: list[str] = []
        self.down = False
        self.refused = 0
        self._lock = threading.Lock()
        self._next_ts = 1_700_000_000
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                method = self.path.strip("/").split("/")[-1]
                with fake._lock:
                    if fake.down:
                        fake.refused += 1
                        self.send_response(503)
                        self.end_headers()
                        return
                    fake.calls.append((method, body))
                    fake.tokens.append(self.headers.get("authorization", ""))
                    fake._next_ts += 1
                    answer: dict[str, Any] = {
                        "ok": True,
                        "channel": body.get("channel"),
                        "ts": f"{fake._next_ts}.000100",
                    }
                raw = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def of(self, method: str) -> list[dict[str, Any]]:
        """The bodies of the calls to ``method``, in order."""
        with self._lock:
            return [body for name, body in self.calls if name == method]


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


def signed(
    payload: dict[str, Any], *, secret: str = SIGNING_SECRET, at: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """A body and headers as Slack posts an interaction: a form with ``payload``, signed v0 over it."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": f"v0={digest}",
    }
    return body, headers


def click(user: str, action: str, value: str, *, message_ts: str = "1700000001.000100") -> dict[str, Any]:
    """A ``block_actions`` payload: ``user`` clicked the button ``action`` carrying ``value``."""
    return {
        "type": "block_actions",
        "user": {"id": user},
        "trigger_id": "trigger-1",
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": CHANNEL},
        "actions": [
            {"action_id": f"crossgate.{action}", "value": value, "type": "button", "action_ts": str(time.time())}
        ],
    }


def submission(user: str, view: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A ``view_submission`` payload: ``user`` submitted the modal ``view`` (as opened) with ``values``."""
    return {"type": "view_submission", "user": {"id": user}, "view": {**view, "state": {"values": values}}}

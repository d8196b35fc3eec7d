"""A real uvicorn on 127.0.0.1 in a background thread, and a tiny webhook receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import uvicorn


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` on a free port; yield its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # not the main thread
    thread = threading.Thread(target=server.run, name="live-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class Receiver:
    """Records webhook deliveries; ``fail_first`` answers 500 that many times; ``silent`` never answers."""

    def __init__(self, *, fail_first: int = 0, silent: bool = False) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.raw: list[bytes] = []
        self.attempts = 0
        self.fail_first = fail_first
        self.silent = silent
        self.release = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                with receiver._lock:
                    receiver.attempts += 1
                    attempt = receiver.attempts
                if receiver.silent:
                    receiver.release.wait(30)
                    return
                if attempt <= receiver.fail_first:
                    self.send_response(500)
                    self.end_headers()
                    return
                with receiver._lock:
                    receiver.raw.append(raw)
                    receiver.bodies.append(json.loads(raw))
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

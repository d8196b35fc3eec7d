"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for SDKs that call the API over HTTP.

Each ``POST .../chat/completions`` gets the next turn of the script: a turn is a function of the request's
messages that returns an assistant message (a tool call or text). Every request body is kept, so a test can
read exactly what the model was shown. Non-streamed only; a request past the end of the script is a 500.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Message = dict[str, Any]
Turn = Callable[[list[Message]], Message]


def call(tool: str, args: dict[str, Any]) -> Turn:
    """A turn that proposes one call of ``tool``."""

    def turn(messages: list[Message]) -> Message:
        return tool_call(tool, args, f"call_{len(messages)}")

    return turn


def tool_call(tool: str, args: dict[str, Any], call_id: str) -> Message:
    function = {"name": tool, "arguments": json.dumps(args)}
    calls = [{"id": call_id, "type": "function", "function": function}]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def last_tool_result(messages: list[Message]) -> str:
    """What the model was given as the result of its latest tool call."""
    return str(next(m["content"] for m in reversed(messages) if m.get("role") == "tool"))


def report() -> Turn:
    """A final answer that quotes, verbatim, the result of the latest tool call."""

    def turn(messages: list[Message]) -> Message:
        return {"role": "assistant", "content": f"Done. The last tool said: {last_tool_result(messages)}"}

    return turn


class ScriptedChatServer:
    """Serves ``turns`` in order; ``requests`` holds every body received."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, name="scripted-openai", daemon=True)

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            index = len(self.requests) - 1
        if index >= len(self.turns):
            return 500, {"error": {"message": f"the script has {len(self.turns)} turns", "type": "server_error"}}
        message = self.turns[index](body.get("messages", []))
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        completion = {"id": f"chatcmpl-{index}", "object": "chat.completion", "created": int(time.time())}
        return 200, {**completion, "model": body.get("model", "scripted"), "choices": [choice], "usage": usage}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path.rstrip("/").endswith("/chat/completions"):
                    status, out = owner._answer(json.loads(raw))
                else:
                    status, out = 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

"""A scripted Anthropic Messages API on 127.0.0.1 for offline tests of Claude agents.

``MessagesAPI`` serves the Messages API the bundled Claude Code CLI calls, so a Claude Agent SDK agent
(gated by crossgate or not) runs through the real CLI and SDK with no network and no API key::

    from crossgate_claude.testing import MessagesAPI, cli_env

    with MessagesAPI() as api:
        options = ClaudeAgentOptions(env=cli_env(api.base_url, tmp_path / "cli"), ...)
        ...  # the prompt 'CALL delete_ticket {"id": "t3"}' makes the model call that tool

The model (``ScriptedModel``) is driven by the first user prompt: every line ``CALL <tool> <json>`` is
one tool call, made one per model turn in order (an ``ALSO <tool> <json>`` line adds a parallel call to
the turn before); once every call has its ``tool_result``, the model answers ``FINAL_TEXT`` and
``end_turn``. ``<tool>`` may be the bare name of an SDK MCP tool (``delete_ticket`` matches
``mcp__tickets__delete_ticket``). The model is stateless, so a session resumed by another CLI process
gets the same script. Every request body is recorded, in ``MessagesAPI.requests`` and, with
``record_path``, as one JSON line per request, so a test can read what another process's CLI sent
(``recorded``); ``tool_uses``, ``tool_results`` and ``all_tool_results`` read the model's calls and
what it was told back.

A subagent (``ClaudeAgentOptions(agents=...)``) needs no script of its own: the CLI sends its
conversation to the same API, and its first user message is the ``prompt`` the main model gave the
``Agent`` tool, so ``CALL`` lines in that prompt script the subagent. ``agent_call`` writes such a line
(``Agent`` calls run in the background unless ``background=False``); ``first_prompt`` tells the
conversations apart.

``cli_env`` isolates the CLI: its config, home and temp files go under one folder, and every kind of
non-essential traffic is off, so nothing leaves 127.0.0.1.

This module is not imported by ``crossgate_claude`` itself; it uses only the standard library.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "FINAL_TEXT",
    "MessagesAPI",
    "ScriptedModel",
    "agent_call",
    "all_tool_results",
    "cli_env",
    "first_prompt",
    "recorded",
    "result_text",
    "scripted_calls",
    "scripted_turns",
    "sse_frames",
    "tool_results",
    "tool_uses",
]

CALL_PREFIX = "CALL "
ALSO_PREFIX = "ALSO "
FINAL_TEXT = "All requested tool calls were answered."


def cli_env(base_url: str, root: Path) -> dict[str, str]:
    """Environment for ``ClaudeAgentOptions(env=...)`` that keeps the CLI offline and inside ``root``."""
    config, home, tmp = root / "claude-config", root / "home", root / "tmp"
    for folder in (config, home, tmp):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CONFIG_DIR": str(config),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        # bypassPermissions refuses to start as root unless the CLI believes it is sandboxed.
        "IS_SANDBOX": "1",
    }


def agent_call(
    subagent_type: str, *calls: tuple[str, dict[str, Any]], background: bool = True, description: str = "delegate"
) -> str:
    """A ``CALL Agent`` line: the main model starts ``subagent_type``, whose prompt scripts ``calls``."""
    script = "\n".join(f"{CALL_PREFIX}{name} {json.dumps(args)}" for name, args in calls)
    args: dict[str, Any] = {"subagent_type": subagent_type, "description": description, "prompt": script}
    if not background:
        args["run_in_background"] = False
    return f"{CALL_PREFIX}Agent {json.dumps(args)}"


def scripted_turns(prompt: str) -> list[list[tuple[str, dict[str, Any]]]]:
    """The model turns a prompt scripts: one per ``CALL`` line, and ``ALSO`` lines join the turn before."""
    turns: list[list[tuple[str, dict[str, Any]]]] = []
    for line in prompt.splitlines():
        for prefix in (CALL_PREFIX, ALSO_PREFIX):
            if line.startswith(prefix):
                name, _, raw = line[len(prefix) :].strip().partition(" ")
                call = (name, json.loads(raw) if raw.strip() else {})
                if prefix == ALSO_PREFIX and turns:
                    turns[-1].append(call)
                else:
                    turns.append([call])
    return turns


def scripted_calls(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    """Every scripted call of a prompt, in order."""
    return [call for turn in scripted_turns(prompt) for call in turn]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def first_prompt(body: dict[str, Any]) -> str:
    """The text of a request's first user message: the script of its conversation (main or subagent)."""
    first = next((m for m in body.get("messages", []) if m.get("role") == "user"), None)
    return _text_of(first.get("content")) if first else ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of the last user message of one request body."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not users or not isinstance(users[-1].get("content"), list):
        return []
    return [b for b in users[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    """A tool_result's content as plain text."""
    content = block.get("content")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content or "")


class ScriptedModel:
    """Decides the next assistant message from the conversation so far (stateless across processes)."""

    def reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """Content blocks and stop reason for the request ``body``."""
        messages = body.get("messages", [])
        turns = scripted_turns(first_prompt(body))
        made = sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            and isinstance(m.get("content"), list)
            and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in m["content"])
        )
        tools = [t.get("name", "") for t in body.get("tools", [])]
        if made < len(turns):
            blocks = []
            for name, args in turns[made]:
                resolved = next((t for t in tools if t == name or t.endswith("__" + name)), name)
                blocks.append(
                    {"type": "tool_use", "id": "toolu_" + secrets.token_hex(10), "name": resolved, "input": args}
                )
            return blocks, "tool_use"
        return [{"type": "text", "text": FINAL_TEXT}], "end_turn"


def sse_frames(blocks: list[dict[str, Any]], stop_reason: str, model: str) -> Iterator[str]:
    """The Messages API streaming events for one assistant message."""

    def frame(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    usage = {"input_tokens": 10, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message: dict[str, Any] = {
        "id": "msg_" + secrets.token_hex(8),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield frame("message_start", {"type": "message_start", "message": message})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            half = len(raw) // 2
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in (raw[:half], raw[half:])]
        yield frame("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        for delta in deltas:
            yield frame("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield frame("content_block_stop", {"type": "content_block_stop", "index": index})
    yield frame(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield frame("message_stop", {"type": "message_stop"})


class MessagesAPI:
    """The scripted server; use as a context manager or call ``start`` and ``stop``."""

    def __init__(self, model: ScriptedModel | None = None, *, record_path: Path | None = None) -> None:
        self.model = model or ScriptedModel()
        self.record_path = record_path
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, for ``cli_env`` or ``ANTHROPIC_BASE_URL``."""
        if self._server is None:
            raise RuntimeError("start the MessagesAPI before asking for its base_url")
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> MessagesAPI:
        """Serve on a free port of 127.0.0.1 in a daemon thread; returns self."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.startswith("/v1/messages/count_tokens"):
                    self._send("application/json", json.dumps({"input_tokens": 10}).encode())
                    return
                if not self.path.startswith("/v1/messages"):
                    self.send_error(404)
                    return
                api._record(body)
                blocks, stop = api.model.reply(body)
                payload = "".join(sse_frames(blocks, stop, body.get("model", "claude-test"))).encode()
                self._send("text/event-stream", payload)

            def _send(self, content_type: str, payload: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", "req_" + secrets.token_hex(6))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="messages-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            if self.record_path is not None:
                with self.record_path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(body) + "\n")


def recorded(record_path: Path) -> list[dict[str, Any]]:
    """Every request body recorded to ``record_path`` (by any process), in order."""
    if not record_path.exists():
        return []
    return [json.loads(line) for line in record_path.read_text(encoding="utf-8").splitlines() if line.strip()]


def all_tool_results(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """tool_use_id -> the tool_result block the model first received for it."""
    seen: dict[str, dict[str, Any]] = {}
    for body in bodies:
        for message in body.get("messages", []):
            if message.get("role") != "user" or not isinstance(message.get("content"), list):
                continue
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    seen.setdefault(block.get("tool_use_id", ""), block)
    return seen


def tool_uses(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool_use block the model made, in order, deduplicated by id."""
    seen: dict[str, dict[str, Any]] = {}
    for body in bodies:
        for message in body.get("messages", []):
            if message.get("role") == "assistant" and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        seen.setdefault(block["id"], block)
    return list(seen.values())

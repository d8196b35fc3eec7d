"""What a session's transcript says about a deferred call: did an earlier resume's CLI get past it?

A resumed session re-asks permission for its deferred call only while the call has no result in the
session. A resumer killed while its CLI child lived on leaves a CLI that records a result for the call
itself (the tool ran, failed, or was cut off) and may finish the turn; a later resume of that session has
nothing to re-ask and the CLI would wait for a prompt forever. The transcript tells the two apart.

The CLI writes it to ``$CLAUDE_CONFIG_DIR/projects/<project>/<session id>.jsonl`` (``CLAUDE_CONFIG_DIR``
defaults to ``$HOME/.claude``), one JSON object per line; user and assistant entries carry the API
message under ``message``. The SDK's own ``get_session_messages`` reads only this process's environment,
not the ``env`` the CLI is started with, so the file is read here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class PastCall:
    """A deferred call the session has a result for already."""

    result: str
    """The tool result the session recorded for the call (what the model read)."""
    final: str | None
    """The text the turn ended with after it, or None while the turn has not ended."""


def transcript_path(env: Mapping[str, str], session: str) -> Path | None:
    """The session's transcript for a CLI started with ``env`` over this environment, if it exists."""
    merged = {**os.environ, **env}
    config = merged.get("CLAUDE_CONFIG_DIR") or str(Path(merged.get("HOME") or Path.home()) / ".claude")
    # The CLI files it under its cwd's project folder, and a resume from another cwd still finds it.
    found = sorted((Path(config) / "projects").glob(f"*/{session}.jsonl"))
    return found[0] if found else None


def past_call(path: Path, tool_use_id: str) -> PastCall | None:
    """The result ``path`` records for ``tool_use_id`` and how the turn ended; None if it has no result."""
    messages = _messages(path)
    for index, message in enumerate(messages):
        for block in _blocks(message):
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                return PastCall(_text(block.get("content")), _ending(messages[index + 1 :]))
    return None


def _messages(path: Path) -> list[Mapping[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    messages: list[Mapping[str, Any]] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:  # a line the CLI is still writing
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") in ("user", "assistant") and isinstance(message, dict):
            messages.append(message)
    return messages


def _ending(after: list[Mapping[str, Any]]) -> str | None:
    """The turn's final text: its last message is the assistant's, asking for no tool."""
    if not after or after[-1].get("role") != "assistant":
        return None
    blocks = _blocks(after[-1])
    if any(b.get("type") == "tool_use" for b in blocks):
        return None
    return _text(blocks)


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""

"""When a Claude session's run is over: its turn, and the turns its background subagents owe.

A subagent the main model starts in the background outlives the main turn: the CLI sends the turn's
``ResultMessage`` while the subagent still works (and may still wait in ``can_use_tool`` for a
reviewer). When the subagent finishes, the CLI tells the main agent (CLI 2.1.332, verified): in the
main agent's next request if its turn is still running (a main-thread tool result follows the
notification), otherwise in a follow-up turn whose result carries
``origin {"kind": "task-notification", "runId": <the task's run_id>}``. Disconnecting at the first
result would kill the subagent with its calls. ``RunTracker`` reads the same task frames the SDK
tracks and says when the last owed result has arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    ClaudeSDKClient,
    Message,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    ToolResultBlock,
    UserMessage,
)

from crossgate import AdapterError

AGENT_TASKS = frozenset({"local_agent", "local_workflow"})
"""Task types that run a subagent to completion (the SDK waits for the same ones)."""
TERMINAL = frozenset({"completed", "failed", "stopped", "killed"})
TOOL_DEFERRED = "tool_deferred"
FOLLOW_UP_WAIT = 60.0
"""Seconds to wait between turns for a follow-up turn a finished background subagent owes."""


@dataclass
class RunTracker:
    """Fed every message of a run; ``done`` once the run's last result is in."""

    running: set[str] = field(default_factory=set)
    """Subagent tasks started and not finished."""
    owed: set[str] = field(default_factory=set)
    """Run ids of background tasks whose notification the main agent has not been given yet."""
    finished: set[str] = field(default_factory=set)
    """Run ids of background tasks that finished; their notification goes with the next main request."""
    runs: dict[str, str] = field(default_factory=dict)
    """task_id -> run_id of background tasks."""
    result: ResultMessage | None = None
    between_turns: bool = False
    """A result came and no new turn has started since."""

    def observe(self, message: Message) -> None:
        """Account for one message."""
        if isinstance(message, ResultMessage):
            self.result, self.between_turns = message, True
            origin: Any = message.origin or {}
            if origin.get("kind") == "task-notification":
                self.owed.discard(str(origin.get("runId")))
            return
        self.between_turns = False
        if isinstance(message, TaskStartedMessage) and message.task_type in AGENT_TASKS:
            self.running.add(message.task_id)
            if message.data.get("is_backgrounded"):
                self.runs[message.task_id] = run = str(message.data.get("run_id") or message.task_id)
                self.owed.add(run)
        elif isinstance(message, TaskNotificationMessage) or (
            isinstance(message, TaskUpdatedMessage) and message.status in TERMINAL
        ):
            self.running.discard(message.task_id)
            if message.task_id in self.runs:
                self.finished.add(self.runs[message.task_id])
        elif isinstance(message, UserMessage) and message.parent_tool_use_id is None and _has_tool_result(message):
            # The main agent's turn goes on with another request, which carries the finished tasks' news.
            self.owed -= self.finished

    @property
    def done(self) -> bool:
        """A result arrived, and no subagent runs or owes a turn (a deferral ends the run at once)."""
        if self.result is None or not self.between_turns:
            return False
        if TOOL_DEFERRED in (self.result.stop_reason, self.result.terminal_reason):
            return True
        return not self.running and not self.owed


def _has_tool_result(message: UserMessage) -> bool:
    return isinstance(message.content, list) and any(isinstance(b, ToolResultBlock) for b in message.content)


async def read_run(client: ClaudeSDKClient, watch: Callable[[Message], None] | None = None) -> ResultMessage:
    """Read the messages of one run; return its last result. ``watch`` is shown each message first.

    Between turns, with every subagent finished, a follow-up turn that has not begun within
    ``FOLLOW_UP_WAIT`` seconds is not waited for (the CLI may fold two notifications into one turn).
    """
    run = RunTracker()
    messages = client.receive_messages().__aiter__()
    while not run.done:
        idle = run.between_turns and not run.running
        try:
            message = await asyncio.wait_for(anext(messages), FOLLOW_UP_WAIT if idle else None)
        except (StopAsyncIteration, TimeoutError):
            break
        if watch is not None:
            watch(message)
        run.observe(message)
    if run.result is None:
        raise AdapterError("the CLI ended the turn without a result message")
    return run.result

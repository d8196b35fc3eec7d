"""When a Claude session's run is over: its turn, and the turns its background subagents owe.

A subagent the main model starts in the background outlives the main turn: the CLI sends the turn's
``ResultMessage`` while the subagent still works (and may still wait in ``can_use_tool`` for a
reviewer), and once the subagent finishes it wakes the main agent for a follow-up turn whose result
carries ``origin {"kind": "task-notification", "runId": <the task's run_id>}`` (CLI 2.1.332, verified).
Disconnecting at the first result would kill the subagent with its calls. ``RunTracker`` reads the
same task frames the SDK tracks and says when the last owed result has arrived.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    ClaudeSDKClient,
    Message,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
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
    """Run ids of background tasks whose follow-up turn has not ended yet."""
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
                self.owed.add(str(message.data.get("run_id") or message.task_id))
        elif isinstance(message, TaskNotificationMessage) or (
            isinstance(message, TaskUpdatedMessage) and message.status in TERMINAL
        ):
            self.running.discard(message.task_id)

    @property
    def done(self) -> bool:
        """A result arrived, and no subagent runs or owes a turn (a deferral ends the run at once)."""
        if self.result is None or not self.between_turns:
            return False
        if TOOL_DEFERRED in (self.result.stop_reason, self.result.terminal_reason):
            return True
        return not self.running and not self.owed


async def read_run(client: ClaudeSDKClient) -> ResultMessage:
    """Read the messages of one run; return its last result.

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
        run.observe(message)
    if run.result is None:
        raise AdapterError("the CLI ended the turn without a result message")
    return run.result

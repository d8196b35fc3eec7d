"""Helpers for the real-CLI subagent tests: a reviewer that decides as requests arrive, what a model was told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from claude_agent_sdk import ResultMessage

from crossgate import ApprovalRequest, ReviewQueue
from crossgate.decisions import AnyDecision
from crossgate.model import JsonObject
from crossgate_claude.testing import MessagesAPI, all_tool_results, first_prompt, result_text, tool_uses


def reviewer(
    queue: ReviewQueue, decide: Callable[[ApprovalRequest], AnyDecision], *, together: int = 1
) -> asyncio.Task[list[str]]:
    """Decides every request as it turns up (or once ``together`` are pending), until cancelled.

    Returns the (agent, args) it saw.
    """

    async def watch() -> list[str]:
        seen: list[str] = []
        try:
            while True:
                pending = queue.pending()
                for request in pending if len(pending) >= together or seen else ():
                    seen.append(f"{request.call.agent} {json.dumps(request.call.args, sort_keys=True)}")
                    queue.decide(request.id, decide(request), reviewer="ann")
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            return seen

    return asyncio.ensure_future(watch())


async def stop(watching: asyncio.Task[list[str]]) -> list[str]:
    """Stop a reviewer; what it saw."""
    watching.cancel()
    return await watching


def told(bodies: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    """(is_error, text) the model of these conversations received for each of its tool calls, in order."""
    results = all_tool_results(bodies)
    return [
        (bool(results[u["id"]].get("is_error")), result_text(results[u["id"]]))
        for u in tool_uses(bodies)
        if u["id"] in results
    ]


def conversation(api: MessagesAPI, line: str) -> list[dict[str, Any]]:
    """The request bodies of the subagent conversation an ``agent_call`` line starts."""
    script = json.loads(line.removeprefix("CALL Agent "))["prompt"]
    return [b for b in api.requests if first_prompt(b) == script]


def tools_offered(bodies: list[dict[str, Any]]) -> set[str]:
    """Every tool name the model of these requests was offered."""
    return {t.get("name", "") for b in bodies for t in b.get("tools", [])}


def context_of(payload: JsonObject) -> dict[str, Any]:
    """The call context an audit event's payload recorded."""
    context = payload.get("context")
    return context if isinstance(context, dict) else {}


def origin_kind(result: ResultMessage) -> str | None:
    """What started the turn that ``result`` ends (``task-notification`` for a subagent's news)."""
    return result.origin.get("kind") if result.origin else None

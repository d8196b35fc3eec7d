"""Whether the model is offered the tools crossgate gates: read from the CLI's ``init`` message.

The CLI lists, in the ``system``/``init`` message that opens each session, the tools it has and the
state of each MCP server. Two cases leave a gated tool out of what the model is offered (CLI 2.1.332,
verified with the bundled CLI):

- ``ToolSearch`` is among the tools (the default tool set, unless ``ENABLE_TOOL_SEARCH=false``): the CLI
  defers every MCP tool behind it. The model sees their names only after it searches for them; a call
  by name before that (a scripted model, a prompt that names the tool) is answered "No such tool
  available", reaches no hook, and nothing is asked. ``ClaudeAgentOptions(tools=[...])`` without
  ``ToolSearch`` (``tools=[]`` for none of the built-ins) offers them directly.
- An MCP server is neither ``connected`` nor ``pending`` (it ``failed`` to start, ``needs-auth``, ...):
  none of its tools is offered, so none runs and none is reviewed.

Either is a warning, not an error: a model that searches finds the deferred tools, and their calls are
gated as any other.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from claude_agent_sdk import Message, SystemMessage

DEFERRING_TOOL = "ToolSearch"
"""The CLI's tool that MCP tools are deferred behind while it is among the session's tools."""
MCP_PREFIX = "mcp__"


class ToolNotOfferedWarning(UserWarning):
    """A tool crossgate gates is not offered to the model directly, so a call by its name reaches no review.

    Raised as a warning once per gate and problem, from the CLI's ``init`` message; the text names the
    tools and how to offer them.
    """


def not_offered(init: Mapping[str, Any]) -> str | None:
    """What the CLI's ``init`` data says is not offered to the model, as one message; None when all is."""
    tools = [t for t in init.get("tools") or () if isinstance(t, str)]
    problems = []
    deferred = [t for t in tools if t.startswith(MCP_PREFIX)]
    if DEFERRING_TOOL in tools and deferred:
        problems.append(
            f"the CLI offers the MCP tools {', '.join(deferred)} only through {DEFERRING_TOOL}: a model that "
            "calls one by name before searching for it gets 'No such tool available', and no review is asked. "
            f"Pass ClaudeAgentOptions(tools=[...]) without {DEFERRING_TOOL} (tools=[] for no built-in tools), "
            "or ENABLE_TOOL_SEARCH=false in its env, to offer them directly"
        )
    for server in init.get("mcp_servers") or ():
        if not isinstance(server, Mapping):
            continue
        status = server.get("status")
        if status not in ("connected", "pending"):  # a pending server may still connect
            problems.append(
                f"MCP server {server.get('name')!r} is {status}: none of its tools is offered to the model, "
                "so none runs and none is reviewed"
            )
    return "; ".join(problems) + "." if problems else None


class OfferedCheck:
    """Warns about each problem :func:`not_offered` finds, once per gate."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, message: Message) -> None:
        """Look at one message of a session; only the ``init`` one matters."""
        if not isinstance(message, SystemMessage) or message.subtype != "init":
            return
        problem = not_offered(message.data)
        if problem is None or problem in self._said:
            return
        self._said.add(problem)
        warnings.warn(problem, ToolNotOfferedWarning, stacklevel=2)

"""How crossgate names a Claude tool: by the tool's own name, with the MCP server that offers it apart.

The CLI calls an MCP tool ``mcp__<server>__<tool>``. Every SDK names a tool by its own name, so a policy
rule for ``delete_ticket`` must hold whatever server offers it: the neutral name is ``<tool>`` and the
server goes into the call's context (``mcp_server``; the CLI's name stays there as ``claude_tool``).

Server names may contain ``__`` (``team__ops``), so the CLI's name is never split on ``__``: the server
is the one the CLI reports for the call (PreToolUse inputs carry ``mcp_server {name, source}``), else
the longest known server (the options' ``mcp_servers``) whose ``mcp__<server>__`` prefixes the name. A
name of that form that no known server explains is refused: guessing could name it after a tool the
policy does not mean, and the call would slip past a rule written for its real name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MCP_PREFIX = "mcp__"
UNKNOWN_SERVER = (
    "crossgate cannot tell which MCP server offers the tool {tool!r} (no server it knows of has that prefix), "
    "so it was not run."
)
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")


class UnknownServer(Exception):
    """An ``mcp__`` name no known server explains; the message is what the model reads."""


@dataclass(frozen=True)
class ToolName:
    """A Claude tool as crossgate names it: ``tool`` for the policy, ``server`` when an MCP server offers it."""

    claude: str
    """The CLI's name (``mcp__tickets__delete_ticket``, ``Bash``)."""
    tool: str
    server: str | None = None

    def context(self) -> dict[str, Any]:
        """What the call's context says about the name: the CLI's name and the server, for MCP tools."""
        if self.server is None:
            return {}
        return {"claude_tool": self.claude, "mcp_server": self.server}


def in_tool_name(server: str) -> str:
    """A server's name as the CLI writes it inside tool names (characters other than ``[A-Za-z0-9_-]`` are ``_``)."""
    return _NOT_IN_NAME.sub("_", server)


def name_tool(claude_tool: str, servers: Iterable[str], reported: Any = None) -> ToolName:
    """The neutral name of ``claude_tool``; ``reported`` is the hook input's ``mcp_server`` (or None).

    Raises ``UnknownServer`` for an ``mcp__`` name that neither the reported server nor a known one prefixes.
    """
    if not claude_tool.startswith(MCP_PREFIX):
        return ToolName(claude_tool, claude_tool)
    told = reported.get("name") if isinstance(reported, Mapping) else None
    candidates = [told] if isinstance(told, str) and told else []
    candidates += sorted(set(servers), key=len, reverse=True)
    for server in candidates:
        prefix = f"{MCP_PREFIX}{in_tool_name(server)}__"
        if claude_tool.startswith(prefix) and len(claude_tool) > len(prefix):
            return ToolName(claude_tool, claude_tool[len(prefix) :], server)
    raise UnknownServer(UNKNOWN_SERVER.format(tool=claude_tool))


def known_servers(mcp_servers: Mapping[str, Any] | str | Path) -> tuple[str, ...]:
    """The MCP server names the options configure: the mapping's keys, or the ``mcpServers`` of a config file.

    The config may be given as a path or as JSON text (as the CLI's ``--mcp-config`` takes it); one that
    cannot be read names no server, and calls of its tools are then named by what the CLI reports.
    """
    if isinstance(mcp_servers, Mapping):
        return tuple(str(name) for name in mcp_servers)
    try:
        text = str(mcp_servers)
        data = json.loads(text) if text.lstrip().startswith("{") else json.loads(Path(text).read_text("utf-8"))
    except (OSError, ValueError):
        return ()
    servers = data.get("mcpServers", data) if isinstance(data, dict) else {}
    return tuple(str(name) for name in servers) if isinstance(servers, dict) else ()

"""The argument schema a Claude request carries, so that a reviewer's edit that cannot run is refused up front.

Where the SDK has one: an in-process SDK MCP server (``create_sdk_mcp_server``) lists its tools' input
schemas, and the CLI's built-in tools have the schemas in ``_builtin_schemas``. ``Gate(args_schemas=...)``
names a tool's schema explicitly and wins over both. Tools of MCP servers that run as their own processes
(stdio, HTTP) carry none unless given that way: crossgate does not start them.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crossgate.model import JsonObject
from crossgate_claude._builtin_schemas import BUILTIN_SCHEMAS

log = logging.getLogger("crossgate_claude")


@dataclass
class Schemas:
    """The argument schemas of one session's tools, by (MCP server or None, tool name)."""

    given: Mapping[str, JsonObject] = field(default_factory=dict)
    """``Gate(args_schemas=...)``: by neutral tool name, for every server."""
    listed: dict[tuple[str, str], JsonObject] = field(default_factory=dict)
    """What the SDK MCP servers list: (server, tool) -> input schema."""

    def of(self, tool: str, server: str | None) -> JsonObject | None:
        """The schema of ``tool`` (of ``server`` for an MCP tool), or None when none is known."""
        if tool in self.given:
            return self.given[tool]
        if server is not None:
            return self.listed.get((server, tool))
        return BUILTIN_SCHEMAS.get(tool)

    def to_validate(self, tool: str, server: str | None) -> JsonObject | None:
        """The schema the hook checks a call's arguments against before the policy judges them.

        The CLI converts an MCP call's arguments to the tool's schema where it can (``"1000000"`` for a number)
        and hands on what it cannot (``"1e6"``), which a server might still convert as it runs: so arguments
        that fail the schema are refused before the policy sees them. The built-in tools' are left to the CLI,
        which checks their input itself and may add fields of its own.
        """
        if tool in self.given:
            return self.given[tool]
        return self.listed.get((server, tool)) if server is not None else None

    async def list_sdk_servers(self, mcp_servers: object) -> None:
        """Read the tool schemas of every in-process SDK MCP server of the options' ``mcp_servers`` (once each)."""
        if not isinstance(mcp_servers, Mapping):
            return
        for name, config in mcp_servers.items():
            instance = config.get("instance") if isinstance(config, Mapping) and config.get("type") == "sdk" else None
            if instance is None or any(server == name for server, _ in self.listed):
                continue
            try:
                tools = await _list_tools(instance)
            except Exception:
                log.warning("crossgate could not list the tools of the MCP server %r; no schemas", name, exc_info=True)
                continue
            for tool in tools:
                schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
                if isinstance(schema, dict):
                    self.listed[(str(name), str(tool.name))] = schema


async def _list_tools(server: Any) -> list[Any]:
    """Every tool an in-process ``mcp`` server lists, over an in-memory client session (mcp 2.x or 1.x)."""
    tools: list[Any] = []
    try:
        client_module: Any = importlib.import_module("mcp.client.client")
    except ImportError:  # mcp 1.x
        memory: Any = importlib.import_module("mcp.shared.memory")
        async with memory.create_connected_server_and_client_session(server) as session:
            cursor = None
            while True:
                page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                tools.extend(page.tools)
                cursor = page.nextCursor
                if not cursor:
                    return tools
    async with client_module.Client(server) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

"""The Agent Approval Protocol (AAP v1) provider in ``crossgate serve``, mounted under ``/aap``.

Agents that speak AAP (its Python client and middleware, Claude Code, Codex and MCP gateway adapters)
submit tool calls over HTTP with an agent credential and no store access; each call is an ordinary
crossgate request. See docs/agents-over-http.md.
"""

from crossgate.server.aap.provider import Provider
from crossgate.server.aap.registry import Instance, MemoryRegistry
from crossgate.server.aap.routes import AAP_PATH, create_aap_app

__all__ = ["AAP_PATH", "Instance", "MemoryRegistry", "Provider", "create_aap_app"]

"""The native agent API (``/api/agent/v1``): what ``crossgate.remote.RemoteQueue`` and the TypeScript client call."""

from crossgate.server.agent_api.routes import AGENT_API_PATH, router
from crossgate.server.agent_api.service import CHANNEL, AgentApi

__all__ = ["AGENT_API_PATH", "CHANNEL", "AgentApi", "router"]

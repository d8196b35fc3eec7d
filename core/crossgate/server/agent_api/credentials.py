"""Who is calling the agent API: an agent credential, never a reviewer.

An agent credential is an AAP instance's token or an agent service's from the tokens file (scope
``agent``); the AAP registry knows both, so one lookup answers for either. The instance id is the
identity requests and parked runs are owned by (stable across restarts; a provisioned instance that
is deleted and created again is a new owner), and its name is the actor the audit log records.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from crossgate.server.aap.registry import MemoryRegistry
from crossgate.server.access import Authenticator
from crossgate.server.errors import ForbiddenError, UnauthenticatedError


@dataclass(frozen=True, slots=True)
class AgentCaller:
    """An authenticated agent credential."""

    id: str
    """The owner of what it creates (its AAP instance id)."""
    name: str
    """The actor of what it records."""


def agent_caller(request: Request, auth: Authenticator, registry: MemoryRegistry) -> AgentCaller:
    """The agent behind ``request``'s bearer token; 401 without a live agent credential, 403 for another kind."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    token = value.strip()
    if scheme.lower() != "bearer" or not token:
        raise UnauthenticatedError("send the agent credential as 'Authorization: Bearer <token>'")
    instance = registry.instance_for(token)
    if instance is not None:
        return AgentCaller(id=instance.id, name=instance.name)
    if auth.reviewer_for(token) is not None:
        raise ForbiddenError("this is a reviewer's token; the agent API takes an agent credential")
    agent = auth.agent_for(token)
    if agent is not None and agent.scope != "agent":
        raise ForbiddenError(f"this is a {agent.scope} token; the agent API takes an agent credential")
    raise UnauthenticatedError("this bearer token is no live agent credential (unknown, revoked or deleted)")

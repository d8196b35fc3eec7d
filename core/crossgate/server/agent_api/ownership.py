"""Which agent credential owns a request or a parked run, kept with the row itself.

The server stamps every call that comes in over the agent API with ``context["crossgate_agent"]``
(``{"id", "name", "key"}``: the credential's owner id and name, and a digest of the idempotency key
it came with), overwriting whatever the agent put there, and a parked run's metadata the same way.
The stamp lives in the store with the request, so ownership survives a restart and needs no table of
its own; policy rules may test it (``context: [{arg: crossgate_agent.name, ...}]``), as they may test
``requested_by``. Anything without the caller's stamp is not the caller's: the routes answer 404.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from crossgate.model import ApprovalRequest, JsonObject, ParkedRun, ToolCall

if TYPE_CHECKING:  # the AAP provider imports this module, and credentials imports the AAP registry
    from crossgate.server.agent_api.credentials import AgentCaller

OWNER_KEY = "crossgate_agent"
"""The context key (of a call) and metadata key (of a parked run) that names the owning credential."""


def key_digest(key: str) -> str:
    """What a stamp keeps of an idempotency key: enough to recognise it, not the key itself."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def stamp(caller: AgentCaller, key: str | None = None, **extra: str) -> JsonObject:
    """The owner stamp of ``caller`` (with the digest of ``key`` and any ``extra`` text fields)."""
    marker: JsonObject = {"id": caller.id, "name": caller.name}
    if key is not None:
        marker["key"] = key_digest(key)
    marker.update(extra)
    return marker


def stamped_call(call: ToolCall, caller: AgentCaller, key: str | None = None) -> ToolCall:
    """``call`` as the server records it: owned by ``caller``, whatever the agent said in its context."""
    return call.model_copy(update={"context": {**call.context, OWNER_KEY: stamp(caller, key)}})


def owner_of(request: ApprovalRequest) -> str | None:
    """The owner id of the credential that created ``request`` over the agent API, if one did."""
    return _owner_of(request.call.context.get(OWNER_KEY))


def _owner_of(marker: object) -> str | None:
    if isinstance(marker, dict):
        owner = marker.get("id")
        return owner if isinstance(owner, str) else None
    return None


def owns_request(caller: AgentCaller, request: ApprovalRequest) -> bool:
    """True if ``caller`` created ``request`` over the agent API."""
    return _owner_of(request.call.context.get(OWNER_KEY)) == caller.id


def owns_parked(caller: AgentCaller, parked: ParkedRun) -> bool:
    """True if ``caller`` parked ``parked`` over the agent API."""
    return _owner_of(parked.metadata.get(OWNER_KEY)) == caller.id


def stamp_of(context: JsonObject) -> JsonObject:
    """The owner stamp in a call's context or a run's metadata ({} without one)."""
    marker = context.get(OWNER_KEY)
    return marker if isinstance(marker, dict) else {}

"""Who a call comes from and in which app context: the agent's name and ``ToolCall.context``, on every path.

A rule scoped to an agent, a ``this_agent_only`` standing rule and a ``context: {tenant: ...}`` condition
only hold if every path names the agent and carries the context the same way. The agent is, in order:
the ``agent=`` given to the path, the name ``Gate`` runs the graph under (``Gate(agent=...)``, else the
graph's own ``name``; passed to nodes in the config), or LangChain's ``lc_agent_name`` (``create_agent(name=...)``,
in the run's metadata). The context is the path's own ``context=`` together with the run's
(``Gate.run(context=...)``, parked with the run and restored on resume); a key given both ways with two
values is refused, as a run acts in one context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from crossgate import ConfigurationError
from crossgate.model import JsonObject

AGENT_KEY: Final = "crossgate_agent"
"""The ``configurable`` key through which ``Gate`` names the agent of the run."""
CONTEXT_KEY: Final = "crossgate_context"
"""The ``configurable`` key through which ``Gate`` hands the run's app context to nodes and middleware."""
LANGCHAIN_AGENT_NAME: Final = "lc_agent_name"
"""Where ``create_agent(name=...)`` puts the agent's name in the run's metadata (langchain 1.x)."""


def agent_in(config: Any, given: str | None) -> str | None:
    """The agent a call of the run of ``config`` comes from: ``given``, the gate's name, or LangChain's."""
    if given is not None:
        return given
    config = config or {}
    named = (config.get("configurable") or {}).get(AGENT_KEY)
    if isinstance(named, str) and named:
        return named
    native = (config.get("metadata") or {}).get(LANGCHAIN_AGENT_NAME)
    return native if isinstance(native, str) and native else None


def context_in(config: Any, given: Mapping[str, Any] | None) -> JsonObject:
    """``given`` together with the run's context from ``config``; ConfigurationError if they disagree."""
    merged: JsonObject = dict(given or {})
    run = ((config or {}).get("configurable") or {}).get(CONTEXT_KEY) or {}
    for key, value in dict(run).items():
        if key in merged and merged[key] != value:
            raise ConfigurationError(
                f"context {key!r} is {merged[key]!r} here but {value!r} for the run; a run acts in one context"
            )
        merged[key] = value
    return merged

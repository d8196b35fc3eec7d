"""The app's context for a gate's calls (a tenant, say), checked once for every adapter."""

from __future__ import annotations

from typing import Any

from crossgate.errors import ConfigurationError, InvalidArgumentsError
from crossgate.fingerprint import require_json
from crossgate.model import JsonObject


def app_context(context: Any) -> JsonObject:
    """The app's call context as given (``Gate(context=)``, ``run(call_context=)``), checked to be a JSON object.

    It is parked with the run and put in every call's ``ToolCall.context``, where policy ``context:``
    conditions test it; anything else is a ConfigurationError, before the run starts.
    """
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise ConfigurationError(f"a call context must be a JSON object, got {type(context).__name__}")
    try:
        require_json(context)
    except InvalidArgumentsError as exc:
        raise ConfigurationError(f"a call context must be a JSON object: {exc}") from exc
    return dict(context)

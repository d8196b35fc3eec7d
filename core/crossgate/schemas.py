"""JSON Schema of the answers a request allows: what LangGraph's ``response_schema`` carries and the page renders.

The schema has one ``oneOf`` branch per allowed decision kind, no ``$ref`` (some consumers do not resolve
them), and leaves out what the queue stamps itself (reviewer, channel, time). For a given request the
``edit`` branch's ``args`` is the tool's own argument schema and ``fingerprint`` must be the request's.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from crossgate.model import ALL_DECISIONS, ApprovalRequest, Approve, DecisionKind, Edit, Reject, Respond

_STAMPED = ("reviewer", "channel", "decided_at")
_MODELS: dict[DecisionKind, type[Approve | Edit | Reject | Respond]] = {
    DecisionKind.APPROVE: Approve,
    DecisionKind.EDIT: Edit,
    DecisionKind.REJECT: Reject,
    DecisionKind.RESPOND: Respond,
}


def decision_schema(request: ApprovalRequest | None = None) -> dict[str, Any]:
    """JSON Schema of a decision: any decision, or exactly those ``request`` allows, bound to its arguments."""
    kinds = request.allowed_decisions if request is not None else ALL_DECISIONS
    branches = [_branch(kind, request) for kind in kinds]
    return {"title": "Decision", "type": "object", "oneOf": branches}


def _branch(kind: DecisionKind, request: ApprovalRequest | None) -> dict[str, Any]:
    branch = copy.deepcopy(_base_branch(kind))
    if request is None:
        return branch
    properties = branch["properties"]
    properties["fingerprint"] = {"const": request.fingerprint, "description": "The fingerprint the reviewer saw."}
    if kind is DecisionKind.EDIT and request.args_schema is not None:
        properties["args"] = copy.deepcopy(request.args_schema)
    return branch


@cache
def _base_branch(kind: DecisionKind) -> dict[str, Any]:
    schema = inline_refs(_MODELS[kind].model_json_schema())
    properties = schema["properties"]
    for name in _STAMPED:
        properties.pop(name, None)
    properties["kind"] = {"const": kind.value}
    schema["required"] = sorted({*schema.get("required", ()), "kind"})
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its definition (for non-recursive schemas)."""
    definitions = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            if "$ref" in node:
                out.update(inline(definitions[node["$ref"].rsplit("/", 1)[-1]]))
            out.update({k: inline(v) for k, v in node.items() if k not in ("$defs", "$ref", "discriminator")})
            return out
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined

"""What each crossgate decision becomes in Pydantic AI (DESIGN.md, decision mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crossgate import DecisionKind

FRAMEWORK = "pydantic-ai"
"""The ``framework`` this adapter reports on every call, request and parked run."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: "DeferredToolResults(approvals={id: ToolApproved()}); crossgate's toolset runs the call",
        DecisionKind.EDIT: (
            "approvals={id: ToolApproved(override_args=<edited>)}; the SDK validates the edit and crossgate's "
            "toolset runs it only if it is the edit the reviewer made"
        ),
        DecisionKind.REJECT: "approvals={id: ToolDenied(<the reviewer's text>)}; the model reads it verbatim",
        DecisionKind.RESPOND: "calls={id: <the reviewer's content>} on the approval id; the tool does not run",
    }
)
"""How each decision reaches the SDK. Remember is a crossgate standing rule, which the policy consults in
crossgate's toolset (Pydantic AI has no standing approvals); an expired or cancelled request answers as
``ToolDenied(<its reason>)``."""

CAPABILITIES: tuple[DecisionKind, ...] = tuple(k for k in DecisionKind if k in DECISION_MAPPING)
"""The decisions this adapter can express for every gated tool: all four."""

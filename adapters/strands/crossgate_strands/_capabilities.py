"""What each crossgate decision becomes in Strands Agents (DESIGN.md, decision mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crossgate import DecisionKind

FRAMEWORK = "strands"
"""The ``framework`` this adapter reports on every call, request and parked run."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: (
            "native pause: crossgate's BeforeToolCallEvent hook raised an interrupt; the resume answers it, the "
            "hook sees the call again and runs the tool once crossgate's check accepted the approval"
        ),
        DecisionKind.EDIT: (
            "native: the hook runs the tool with the reviewer's arguments (Strands lets a hook rewrite tool_use)"
        ),
        DecisionKind.REJECT: (
            "native: the reviewer's message is the call's error result, verbatim (Strands' cancel_tool shape)"
        ),
        DecisionKind.RESPOND: "emulated: the reviewer's content is the call's success result; the tool does not run",
    }
)
"""How each decision reaches the SDK. Remember is a crossgate standing rule, which the policy consults in
crossgate's hook (Strands has no standing approvals); an expired or cancelled request answers with its reason."""

CAPABILITIES: tuple[DecisionKind, ...] = tuple(k for k in DecisionKind if k in DECISION_MAPPING)
"""The decisions this adapter can express for every gated tool: all four."""

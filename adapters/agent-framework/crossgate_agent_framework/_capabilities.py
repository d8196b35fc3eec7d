"""What each crossgate decision becomes in Microsoft Agent Framework (DESIGN.md, decision mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crossgate import DecisionKind

FRAMEWORK = "agent-framework"
"""The ``framework`` this adapter reports on every call, request and parked run."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: (
            "native: the parked function_approval_request answered with approved=True; crossgate's function "
            "middleware runs the call through the SDK's own pipeline"
        ),
        DecisionKind.EDIT: (
            "emulated: the SDK refuses changed arguments after an approval (it asks again), so crossgate's "
            "middleware invokes the tool with the reviewer's arguments itself"
        ),
        DecisionKind.REJECT: (
            "emulated: the SDK's own rejection is a fixed text, so the call is answered approved and crossgate's "
            "middleware returns the reviewer's message as the result, verbatim, without running the tool"
        ),
        DecisionKind.RESPOND: (
            "emulated: the middleware returns the reviewer's content as the call's result; the tool does not run"
        ),
    }
)
"""How each decision reaches the SDK. Remember is a crossgate standing rule, which the policy consults in
crossgate's middleware (the SDK has no standing approvals); an expired or cancelled request answers with
its reason."""

CAPABILITIES: tuple[DecisionKind, ...] = tuple(k for k in DecisionKind if k in DECISION_MAPPING)
"""The decisions this adapter can express for every gated tool: all four."""

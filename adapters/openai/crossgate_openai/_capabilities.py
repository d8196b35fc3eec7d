"""What each crossgate decision becomes in the OpenAI Agents SDK (DESIGN.md, decision mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crossgate import DecisionKind

FRAMEWORK = "openai-agents"
"""The ``framework`` this adapter reports on every call, request and parked run."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: "state.approve(item); the gated tool runs the proposed arguments",
        DecisionKind.EDIT: (
            "state.approve(item); the SDK has no edit, so the gated tool runs the edited arguments "
            "(bound to the call id, checked against the decision's fingerprint)"
        ),
        DecisionKind.REJECT: "state.reject(item, rejection_message=<the reviewer's text, verbatim>)",
        DecisionKind.RESPOND: (
            "state.approve(item); the gated tool returns the reviewer's content as its output and does not run"
        ),
    }
)
"""How each decision reaches the SDK. Remember is a crossgate standing rule (never the SDK's
``always_approve``, which ignores arguments and ends with the run); an expired or cancelled request
answers as a rejection."""

CAPABILITIES: tuple[DecisionKind, ...] = tuple(k for k in DecisionKind if k in DECISION_MAPPING)
"""The decisions this adapter can express for every gated function tool: all four."""

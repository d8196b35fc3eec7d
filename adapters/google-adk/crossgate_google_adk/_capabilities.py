"""What each crossgate decision becomes in Google ADK (DESIGN.md, decision mapping)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crossgate import DecisionKind

FRAMEWORK = "google-adk"
"""The ``framework`` this adapter reports on every call, request and parked run."""

DECISION_MAPPING: Mapping[DecisionKind, str] = MappingProxyType(
    {
        DecisionKind.APPROVE: (
            "native: the parked adk_request_confirmation answered with confirmed=True; ADK hands the call back "
            "with its ToolConfirmation and crossgate's plugin runs the tool"
        ),
        DecisionKind.EDIT: (
            "emulated: ADK does not rewrite a confirmed call's arguments (the tool would have to read a payload), "
            "so crossgate's plugin runs the tool with the reviewer's arguments"
        ),
        DecisionKind.REJECT: (
            "emulated: ADK's own rejection is the fixed error 'This tool call is rejected.', so crossgate's "
            "plugin answers the call with the reviewer's message, verbatim, without running the tool"
        ),
        DecisionKind.RESPOND: (
            "emulated: the plugin answers the call with the reviewer's content; the tool does not run"
        ),
    }
)
"""How each decision reaches the SDK. Remember is a crossgate standing rule, which the policy consults in
crossgate's plugin (ADK has no standing approvals); an expired or cancelled request answers with its reason."""

CAPABILITIES: tuple[DecisionKind, ...] = tuple(k for k in DecisionKind if k in DECISION_MAPPING)
"""The decisions this adapter can express for every gated tool: all four."""

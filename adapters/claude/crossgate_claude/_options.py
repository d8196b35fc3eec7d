"""Merging crossgate's callbacks into the caller's ``ClaudeAgentOptions``, and the shadowing check."""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import HookCallback

from crossgate import ConfigurationError
from crossgate_claude._callbacks import Binding

log = logging.getLogger("crossgate_claude")


class ShadowedCallbackWarning(UserWarning):
    """The given options would approve some calls before ``can_use_tool`` is consulted.

    crossgate's PreToolUse hook still answers ``ask`` for every call the policy asks about, which
    sends the call to ``can_use_tool`` anyway; the warning says that the options alone would not gate
    those calls, so options reused without the gate are unsafe. ``Gate(strict=True)`` refuses
    such options instead.
    """


def whole_tool_entries(allowed_tools: list[str]) -> list[str]:
    """The ``allowed_tools`` entries that approve a whole tool (``"Bash"``, ``"Bash()"``, ``"Bash(*)"``)."""
    shadowed = []
    for entry in allowed_tools:
        name, paren, rest = entry.partition("(")
        if not name.strip():
            continue
        if not paren or rest in (")", "*)"):
            shadowed.append(name)
    return list(dict.fromkeys(shadowed))


def check_shadowing(options: ClaudeAgentOptions, *, strict: bool) -> None:
    """Warn (or raise ConfigurationError when ``strict``) if ``options`` would shadow the callback."""
    problems = []
    if options.permission_mode == "bypassPermissions":
        problems.append("permission_mode 'bypassPermissions' approves every call")
    if shadowed := whole_tool_entries(list(options.allowed_tools)):
        problems.append(f"allowed_tools approves whole tools: {', '.join(shadowed)}")
    if not problems:
        return
    message = (
        "; ".join(problems)
        + ". crossgate's PreToolUse hook still sends every call its policy asks about to review, and denies "
        "what the policy denies, but calls the policy allows run without can_use_tool. Scope the entries "
        "(for example 'Bash(git status)') to rely on the options alone."
    )
    if strict:
        raise ConfigurationError(message)
    warnings.warn(message, ShadowedCallbackWarning, stacklevel=4)


def merge(
    base: ClaudeAgentOptions,
    binding: Binding,
    *,
    hook_timeout: float,
    strict: bool,
    **overrides: Any,
) -> ClaudeAgentOptions:
    """``base`` with crossgate's can_use_tool, PreToolUse (blocking on failure), and recording hooks."""
    if base.can_use_tool is not None:
        raise ConfigurationError("these options already have a can_use_tool callback; crossgate supplies its own")
    if base.permission_prompt_tool_name:
        raise ConfigurationError("permission_prompt_tool_name cannot be combined with crossgate's can_use_tool")
    check_shadowing(base, strict=strict)
    hooks: dict[Any, list[HookMatcher]] = {event: list(matchers) for event, matchers in (base.hooks or {}).items()}
    # A hook that raises or times out fails open unless its matcher says "block".
    gate = HookMatcher(
        matcher=None, hooks=[cast(HookCallback, binding.pre_tool_use)], timeout=hook_timeout, on_failure="block"
    )
    record = HookMatcher(matcher=None, hooks=[cast(HookCallback, binding.post_tool_use)], timeout=hook_timeout)
    hooks["PreToolUse"] = [gate, *hooks.get("PreToolUse", [])]
    hooks["PostToolUse"] = [*hooks.get("PostToolUse", []), record]
    # Which subagents run: their calls, and the main agent's meanwhile, are held inline, never deferred.
    tracked = (
        ("SubagentStart", binding.subagent_start),
        ("SubagentStop", binding.subagent_stop),
        ("PostToolUseFailure", binding.post_tool_use_failure),
    )
    for event, callback in tracked:
        track = HookMatcher(matcher=None, hooks=[cast(HookCallback, callback)], timeout=hook_timeout)
        hooks[event] = [*hooks.get(event, []), track]
    if "PermissionRequest" in hooks:
        hooks["PermissionRequest"] = [
            replace(matcher, hooks=[notify_only(h) for h in matcher.hooks]) for matcher in hooks["PermissionRequest"]
        ]
    return replace(base, can_use_tool=binding.can_use_tool, hooks=hooks, **overrides)


def notify_only(callback: HookCallback) -> HookCallback:
    """A PermissionRequest hook that may notify but not decide.

    The CLI races PermissionRequest hooks against ``can_use_tool`` and takes the first answer, so a hook
    that allows would run a call the reviewer has not approved (or has rejected). Its decision is dropped.
    """

    async def wrapped(data: Any, tool_use_id: str | None, context: Any) -> Any:
        output = dict(await callback(data, tool_use_id, context) or {})
        specific = output.get("hookSpecificOutput")
        if isinstance(specific, dict) and "decision" in specific:
            log.warning("crossgate dropped a PermissionRequest hook's decision; the review queue decides")
            output["hookSpecificOutput"] = {k: v for k, v in specific.items() if k != "decision"}
        return output

    return cast(HookCallback, wrapped)

"""Translation at the edge: LangGraph interrupts and LangChain decision dicts to and from neutral decisions.

Three interrupt shapes are understood:

- ``crossgate_approval``: raised by :func:`request_approval`; answered with the neutral decision as JSON;
- ``tool_approval``: LangChain ``HumanInTheLoopMiddleware`` in ``per_call`` mode; one decision dict;
- ``action_requests``/``review_configs``: the middleware's batched mode; ``{"decisions": [...]}`` in order.

Everything a resume sends is checked here first, because LangGraph itself does not: a mapping key
that is not a pending interrupt id is silently taken as *the answer*, and a wrong batched count
raises only after the answer was saved, leaving the thread stuck.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langgraph.types import Command, Interrupt

from crossgate import Approve, DecisionKind, Edit, InvalidDecisionError, Reject, Respond, fingerprint
from crossgate.decisions import AnyDecision

Shape = Literal["crossgate", "tool_approval", "batched"]

APPROVAL_INTERRUPT = "crossgate_approval"
"""``type`` of the value a crossgate interrupt carries."""

_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")
_HITL_TYPES = {k.value for k in DecisionKind}


def interrupt_shape(value: Any) -> Shape | None:
    """Which of the understood shapes an interrupt value has, or None."""
    if isinstance(value, Mapping):
        if value.get("type") == APPROVAL_INTERRUPT:
            return "crossgate"
        if value.get("type") == "tool_approval":
            return "tool_approval"
        if isinstance(value.get("action_requests"), list) and isinstance(value.get("review_configs"), list):
            return "batched"
    return None


def hitl_decision(decision: AnyDecision, tool: str) -> dict[str, Any]:
    """A neutral decision as LangChain's middleware reads it (the edit pinned to ``tool``)."""
    if isinstance(decision, Approve):
        return {"type": "approve"}
    if isinstance(decision, Edit):
        return {"type": "edit", "edited_action": {"name": tool, "args": dict(decision.args)}}
    if isinstance(decision, Reject):
        return {"type": "reject", "message": decision.message}
    return {"type": "respond", "message": decision.content}


def neutral_decision(answer: Mapping[str, Any], tool: str, args: Mapping[str, Any]) -> AnyDecision:
    """A LangChain decision dict for a call of ``tool`` with ``args``, as a neutral decision.

    Refuses an edit that names another tool (the batched middleware would run that other tool under
    the reviewed call's id) and anything that is not one of the four decision types.
    """
    kind = answer.get("type")
    bound = fingerprint(tool, dict(args))
    if kind == "approve":
        return Approve(fingerprint=bound)
    if kind == "edit":
        action = answer.get("edited_action")
        if not isinstance(action, Mapping) or not isinstance(action.get("args"), Mapping):
            raise InvalidDecisionError("an edit needs edited_action with name and args")
        if action.get("name") != tool:
            raise InvalidDecisionError(
                f"an edit of {tool} cannot switch to {action.get('name')!r}; only the arguments can change"
            )
        return Edit(args=dict(action["args"]), fingerprint=bound)
    if kind == "reject":
        return Reject(message=str(answer.get("message") or "A reviewer rejected this call."), fingerprint=bound)
    if kind == "respond":
        if not isinstance(answer.get("message"), str):
            raise InvalidDecisionError("respond needs a message")
        return Respond(content=answer["message"], fingerprint=bound)
    raise InvalidDecisionError(f"unknown decision type {kind!r}; expected one of {sorted(_HITL_TYPES)}")


def check_answer(pending: Interrupt, answer: Any) -> None:
    """Raise InvalidDecisionError unless ``answer`` fits the pending interrupt's shape completely."""
    if answer is None:
        raise InvalidDecisionError(f"interrupt {pending.id}: None is never an answer")
    shape = interrupt_shape(pending.value)
    if shape == "tool_approval":
        _check_hitl(answer, pending.value["name"], None)
    elif shape == "batched":
        _check_batched(pending.id, pending.value, answer)


def _check_hitl(answer: Any, tool: str, allowed: Sequence[str] | None) -> None:
    if not isinstance(answer, Mapping) or answer.get("type") not in _HITL_TYPES:
        raise InvalidDecisionError(f"{tool}: an answer is a dict whose type is one of {sorted(_HITL_TYPES)}")
    if allowed is not None and answer["type"] not in allowed:
        raise InvalidDecisionError(f"{tool}: {answer['type']} is not allowed here; allowed: {', '.join(allowed)}")
    neutral_decision(answer, tool, {})


def _check_batched(interrupt_id: str, value: Mapping[str, Any], answer: Any) -> None:
    decisions = answer.get("decisions") if isinstance(answer, Mapping) else None
    if not isinstance(decisions, list):
        raise InvalidDecisionError(f"interrupt {interrupt_id}: a batched answer is {{'decisions': [...]}}")
    actions, configs = value["action_requests"], value["review_configs"]
    if len(decisions) != len(actions):
        raise InvalidDecisionError(
            f"interrupt {interrupt_id} lists {len(actions)} tool calls but the answer has {len(decisions)} "
            "decisions; nothing was sent"
        )
    for action, config, decision in zip(actions, configs, decisions, strict=True):
        _check_hitl(decision, action["name"], config.get("allowed_decisions"))


def resume_command(pending: Sequence[Interrupt], answers: Mapping[str, Any]) -> Command[Any]:
    """``Command(resume={interrupt_id: answer})``, refused unless every key is a pending interrupt id.

    Answers may cover some of the pending interrupts (the rest stay pending with the same ids); each
    answer is checked against its interrupt's shape before anything is sent.
    """
    by_id = {p.id: p for p in pending}
    if not answers:
        raise InvalidDecisionError("no answers to send")
    for key, answer in answers.items():
        if not isinstance(key, str) or not _INTERRUPT_ID.fullmatch(key) or key not in by_id:
            raise InvalidDecisionError(
                f"{key!r} is not a pending interrupt id (pending: {', '.join(sorted(by_id)) or 'none'}); "
                "LangGraph would take a mapping with such a key as the answer itself"
            )
        check_answer(by_id[key], answer)
    return Command(resume=dict(answers))

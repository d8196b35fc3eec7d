"""The Slack modals (reject, respond, edit, remember) and the decisions read back from their submissions.

The edit form is built from the tool's JSON Schema: one input per property of a flat object schema
(text, number, or true/false), else one JSON text input. Arguments that hold hidden or look-alike
characters are always edited as JSON, where a hidden character shows as a ``\\u`` escape that stands
for the character itself. What comes back is validated against the schema before it is decided.
"""

from __future__ import annotations

import json
from typing import Any

from crossgate.coverage import remember_scopes
from crossgate.decisions import validate_args
from crossgate.display import suspicious_call, visible
from crossgate.errors import InvalidArgumentsError
from crossgate.model import (
    ApprovalRequest,
    Approve,
    Edit,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    Respond,
)
from crossgate.server.slack.blocks import EDIT, REJECT, REMEMBER, RESPOND, Block

AnyDecision = Approve | Edit | Reject | Respond
JSON_BLOCK = "args_json"
VALUE = "value"
_SIMPLE = {"string", "integer", "number", "boolean"}


class FormError(ValueError):
    """A submission that cannot be decided as typed; ``block`` names the input to mark."""

    def __init__(self, block: str, message: str) -> None:
        super().__init__(message)
        self.block = block


def metadata(request: ApprovalRequest) -> str:
    """The modal's ``private_metadata``: the request and the fingerprint its form was built for."""
    return json.dumps({"r": request.id, "f": request.fingerprint})


def read_metadata(view: dict[str, Any]) -> tuple[str, str]:
    """The request id and fingerprint a submitted modal was opened for."""
    raw = json.loads(str(view.get("private_metadata") or "{}"))
    return str(raw["r"]), str(raw["f"])


def modal(action_id: str, request: ApprovalRequest) -> Block:
    """The modal a button opens."""
    tool = visible(request.call.tool)[:40]
    if action_id == REJECT:
        blocks = [_text_input("message", "Message to the agent (the model reads it: write it as an instruction)")]
        return _view(REJECT, request, f"Reject {tool}", "Reject", blocks)
    if action_id == RESPOND:
        blocks = [_text_input("content", "The tool's result to return (the tool does not run)")]
        return _view(RESPOND, request, f"Respond: {tool}", "Send", blocks)
    if action_id == EDIT:
        return _view(EDIT, request, f"Edit {tool}", "Approve edit", edit_blocks(request))
    return _view(REMEMBER, request, f"Remember {tool}", "Approve", remember_blocks(request))


def edit_blocks(request: ApprovalRequest) -> list[Block]:
    """One input per argument of a flat schema, else one JSON input holding the arguments."""
    fields = _flat_fields(request)
    if fields is None:
        text = json_text(request.call.args)
        return [_text_input(JSON_BLOCK, "Arguments (JSON)", initial=text)]
    blocks: list[Block] = []
    for name, kind, required in fields:
        value = request.call.args.get(name)
        label = f"{name}{'' if required else ' (optional)'}"[:2000]
        if kind == "boolean":
            options = [_option("true"), _option("false")]
            element: Block = {"type": "static_select", "action_id": VALUE, "options": options}
            if isinstance(value, bool):
                element["initial_option"] = _option(json.dumps(value))
        elif kind in ("integer", "number"):
            element = {"type": "number_input", "action_id": VALUE, "is_decimal_allowed": kind == "number"}
            if isinstance(value, int | float) and not isinstance(value, bool):
                element["initial_value"] = str(value)
        else:
            element = {"type": "plain_text_input", "action_id": VALUE, "multiline": "\n" in str(value or "")}
            if isinstance(value, str):
                element["initial_value"] = value
        blocks.append(
            {
                "type": "input",
                "block_id": f"arg:{name}",
                "optional": not required,
                "label": _plain(label),
                "element": element,
            }
        )
    return blocks


def remember_blocks(request: ApprovalRequest) -> list[Block]:
    """The remember form: how long the standing rule stands, which later calls it covers, and for which agent.

    The options are the page's; the message says afterwards, in words, what the rule covers.
    """
    call = request.call
    scopes = [_option(s.value, label) for s, label in remember_scopes(call)]
    covers = [_option(RememberMatch.EXACT.value, "only these exact arguments")]
    covers.append(_option(RememberMatch.TOOL.value, f"every call of {visible(call.tool)}"[:75]))
    blocks = [
        _radio("scope", "Remember", scopes),
        _radio("match", "Covers", covers),
    ]
    if call.agent:
        agent = _option("yes", f"only for agent {visible(call.agent)}"[:75])
        element = {"type": "checkboxes", "action_id": VALUE, "options": [agent]}
        blocks.append(
            {"type": "input", "block_id": "agent", "optional": True, "label": _plain("Agent"), "element": element}
        )
    return blocks


def decision_of(callback_id: str, view: dict[str, Any], request: ApprovalRequest, fingerprint: str) -> AnyDecision:
    """The decision a submitted modal makes; FormError for what the reviewer must fix."""
    values = view.get("state", {}).get("values", {})
    if callback_id == REJECT:
        message = _typed(values, "message").strip()
        if not message:
            raise FormError("message", "Write the message the model reads.")
        return Reject(message=message, fingerprint=fingerprint)
    if callback_id == RESPOND:
        content = _typed(values, "content")
        if not content.strip():
            raise FormError("content", "Write the result the tool returns.")
        return Respond(content=content, fingerprint=fingerprint)
    if callback_id == EDIT:
        return Edit(args=edited_args(values, request), fingerprint=fingerprint)
    if callback_id == REMEMBER:
        scope = RememberScope(_selected(values, "scope") or RememberScope.ONCE.value)
        match = RememberMatch(_selected(values, "match") or RememberMatch.EXACT.value)
        agent_only = bool(values.get("agent", {}).get(VALUE, {}).get("selected_options"))
        remember = Remember(scope=scope, match=match, this_agent_only=agent_only)
        return Approve(remember=remember, fingerprint=fingerprint)
    raise FormError("", f"unknown form {callback_id!r}")


def edited_args(values: dict[str, Any], request: ApprovalRequest) -> dict[str, Any]:
    """The edited arguments, validated against the tool's schema; FormError naming the input otherwise."""
    fields = _flat_fields(request)
    args: dict[str, Any] = {}
    if fields is None:
        block = JSON_BLOCK
        try:
            parsed = json.loads(_typed(values, JSON_BLOCK))
        except ValueError as exc:
            raise FormError(block, f"Not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise FormError(block, "The arguments must be a JSON object.")
        args = parsed
    else:
        block = f"arg:{fields[0][0]}" if fields else JSON_BLOCK
        for name, kind, _required in fields:
            raw = _selected(values, f"arg:{name}") if kind == "boolean" else _typed(values, f"arg:{name}")
            if raw in (None, ""):
                continue
            try:
                args[name] = json.loads(raw) if kind != "string" else raw
            except ValueError:
                raise FormError(f"arg:{name}", f"Not a {kind}.") from None
    try:
        validate_args(args, request.args_schema)
    except InvalidArgumentsError as exc:
        # the error says where ("… at limit: …"): mark that argument's input when the form has one
        where = next((f"arg:{name}" for name, _, _ in fields or () if f" at {name}:" in str(exc)), block)
        raise FormError(where, str(exc)[:150]) from None
    if args == request.call.args:
        raise FormError(block, "Nothing changed: approve the call instead, or change an argument.")
    return args


def json_text(args: dict[str, Any]) -> str:
    """The arguments as JSON, with every hidden character written as its ``\\u`` escape (JSON reads it back)."""
    text = json.dumps(args, indent=2, ensure_ascii=False)  # controls inside strings are escaped already
    return "".join(json.dumps(ch)[1:-1] if ch != "\n" and visible(ch) != ch else ch for ch in text)


def _flat_fields(request: ApprovalRequest) -> list[tuple[str, str, bool]] | None:
    schema = request.args_schema
    if suspicious_call(request.call) or not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    listed = schema.get("required")
    required = {str(n) for n in listed} if isinstance(listed, list) else set()
    fields = []
    for name, sub in properties.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        if kind not in _SIMPLE:
            return None
        fields.append((str(name), str(kind), name in required))
    known = set(properties)
    if any(key not in known for key in request.call.args):
        return None  # arguments beyond the schema would be lost by a per-property form
    return fields


def _typed(values: dict[str, Any], block: str) -> str:
    entry = values.get(block, {}).get(VALUE, {})
    return str(entry.get("value") or "")


def _selected(values: dict[str, Any], block: str) -> str | None:
    option = values.get(block, {}).get(VALUE, {}).get("selected_option") or {}
    value = option.get("value")
    return None if value is None else str(value)


def _view(callback_id: str, request: ApprovalRequest, title: str, submit: str, blocks: list[Block]) -> Block:
    return {
        "type": "modal",
        "callback_id": callback_id,
        "private_metadata": metadata(request),
        "title": _plain(title[:24]),
        "submit": _plain(submit),
        "close": _plain("Cancel"),
        "blocks": blocks,
    }


def _radio(block: str, label: str, options: list[Block]) -> Block:
    element = {"type": "radio_buttons", "action_id": VALUE, "options": options, "initial_option": options[0]}
    return {"type": "input", "block_id": block, "label": _plain(label), "element": element}


def _text_input(block: str, label: str, *, initial: str | None = None) -> Block:
    element: Block = {"type": "plain_text_input", "action_id": VALUE, "multiline": True}
    if initial is not None:
        element["initial_value"] = initial[:3000]
    return {"type": "input", "block_id": block, "label": _plain(label[:2000]), "element": element}


def _option(value: str, label: str | None = None) -> Block:
    return {"text": _plain(label or value), "value": value}


def _plain(text: str) -> Block:
    return {"type": "plain_text", "text": text}

"""The arguments a LangChain tool will actually receive, computed before crossgate judges them.

A model may send ``"amount": "1000000"`` for an integer argument: the tool's pydantic schema turns it
into ``1000000`` when the tool runs, so a policy, a fingerprint and a reviewer that saw the string
would judge another call than the one that runs. Every path of this adapter therefore validates the
model's arguments with the tool's own schema first (``tool_call_schema``, which leaves out the
arguments LangGraph injects: state, store, runtime, tool call id), and judges and runs the result;
arguments the tool would refuse are refused before anything is evaluated.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from crossgate import InvalidArgumentsError
from crossgate.model import JsonObject

_VARIADIC = frozenset({"args", "kwargs"})
"""Fields pydantic makes for ``*args``/``**kwargs``; LangChain passes them only when given."""


def tool_args(tool: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as ``tool`` will receive them (JSON values); InvalidArgumentsError if the tool would refuse them.

    Mirrors ``BaseTool._parse_input``: validated by the tool's pydantic schema, with every declared
    field (given or defaulted), fields it does not declare dropped (or refused when its schema forbids
    them). A tool without a pydantic schema (a JSON Schema dict, or no tool) gets the arguments as
    they are, so they are judged as they are.
    """
    schema = _model(tool)
    if schema is None:
        return dict(args)
    name = getattr(tool, "name", "the tool")
    extra = sorted(set(args) - _known(schema))
    if extra and _forbids_extra(tool):
        raise InvalidArgumentsError(f"{name} takes no argument {', '.join(map(repr, extra))}")
    try:
        validated = schema.model_validate(dict(args))
        # By alias: the names the model sees in the tool's schema, and the ones the tool validates again.
        dumped: dict[str, Any] = validated.model_dump(mode="json", by_alias=True)
    except (ValidationError, ValueError, TypeError) as exc:
        raise InvalidArgumentsError(f"arguments fail {name}'s schema: {_first_error(exc)}") from None
    return {k: v for k, v in dumped.items() if k not in _VARIADIC or k in args}


def args_json_schema(tool: Any) -> JsonObject | None:
    """JSON Schema of a tool's arguments as the model sees them, for validating reviewers' edits.

    Arguments a tool does not declare are dropped before it runs, so an edit that adds one could never
    take effect: the schema refuses them (``additionalProperties: false``). A pydantic model's schema is
    made once and the same object returned on every call (the queue caches its checked form by identity):
    read it, do not change it.
    """
    model = _model(tool)
    if model is not None:
        return _model_schema(model)
    raw = getattr(tool, "tool_call_schema", None)
    return dict(raw) if isinstance(raw, dict) else None


@functools.lru_cache(maxsize=1024)
def _model_schema(model: type[BaseModel]) -> JsonObject:
    """``args_json_schema`` of a pydantic model, made once per model (pydantic builds it afresh each time)."""
    schema: JsonObject = dict(model.model_json_schema())
    if not model.model_fields.keys() & _VARIADIC:
        schema["additionalProperties"] = False
    return schema


def refusal(tool: str, error: InvalidArgumentsError) -> str:
    """What the model reads when its arguments do not fit the tool: nothing ran, and how to fix it."""
    return (
        f"crossgate did not run {tool}: {error}. Nothing was executed. "
        f"Call {tool} again with arguments that match its parameters."
    )


def _model(tool: Any) -> type[BaseModel] | None:
    """The model that validates the model's arguments as the tool will: its own ``args_schema`` (aliases,
    ``extra``, validators), or ``tool_call_schema`` when that leaves injected arguments out."""
    call = getattr(tool, "tool_call_schema", None)
    if not (isinstance(call, type) and issubclass(call, BaseModel)):
        return None
    full = getattr(tool, "args_schema", None)
    if isinstance(full, type) and issubclass(full, BaseModel) and set(full.model_fields) == set(call.model_fields):
        return full
    return call


@lru_cache(maxsize=1024)
def _known(schema: type[BaseModel]) -> frozenset[str]:
    """The argument names ``schema`` takes: its fields and their aliases (once per schema class)."""
    return frozenset({*schema.model_fields, *(f.alias for f in schema.model_fields.values() if f.alias)})


def _forbids_extra(tool: Any) -> bool:
    full = getattr(tool, "args_schema", None)
    config = getattr(full, "model_config", None) or {}
    return isinstance(config, Mapping) and config.get("extra") == "forbid"


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = "/".join(str(p) for p in first.get("loc", ())) or "(root)"
        return f"at {where}: {first.get('msg', 'invalid')}"
    return str(exc)

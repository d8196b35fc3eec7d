"""Argument validation against a tool's JSON Schema, and the memo that keeps it cheap per call."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgate import ConfigurationError, InvalidArgumentsError
from crossgate.decisions import check_schema, validate_args


def ticket_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def test_arguments_are_checked_against_the_schema_on_every_call() -> None:
    schema = ticket_schema()
    validate_args({"id": "t3"}, schema)
    with pytest.raises(InvalidArgumentsError, match="at id: 3 is not of type 'string'"):
        validate_args({"id": 3}, schema)
    with pytest.raises(InvalidArgumentsError, match="'id' is a required property"):
        validate_args({}, schema)


def test_a_schema_changed_in_place_is_used_as_it_is_now() -> None:
    schema = ticket_schema()
    validate_args({"id": "t3"}, schema)
    schema["properties"]["id"] = {"type": "integer"}  # the same dict object, different content
    with pytest.raises(InvalidArgumentsError, match="is not of type 'integer'"):
        validate_args({"id": "t3"}, schema)
    validate_args({"id": 3}, schema)


def test_a_schema_checked_once_and_then_broken_in_place_is_refused() -> None:
    schema = ticket_schema()
    check_schema(schema)
    schema["type"] = 12
    with pytest.raises(ConfigurationError, match="not a valid JSON Schema"):
        check_schema(schema)


@pytest.mark.parametrize("draft", ["draft-04", "draft-07", None])
def test_formats_are_annotations_in_every_draft_as_for_the_reference_validator(draft: str | None) -> None:
    # MCP tool schemas often name draft 7; a format there must not refuse what jsonschema accepts.
    schema: dict[str, Any] = {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    if draft:
        schema["$schema"] = f"http://json-schema.org/{draft}/schema#"
    validate_args({"to": "not an address"}, schema)
    with pytest.raises(InvalidArgumentsError, match="is not of type 'string'"):
        validate_args({"to": 5}, schema)


def test_equal_schemas_in_different_objects_give_the_same_answers() -> None:
    first, second = ticket_schema(), ticket_schema()
    validate_args({"id": "a"}, first)
    with pytest.raises(InvalidArgumentsError):
        validate_args({"id": 1}, second)
    check_schema(second)
    with pytest.raises(ConfigurationError, match="args_schema is not JSON"):
        check_schema({"type": "object", "default": float("nan")})


# Tool parameter schemas as SDKs generate them, and arguments a model might send for them.
scalar_schemas = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": ["string", "null"]},
        {"type": "string", "enum": ["a", "b", "ü"]},
        {"type": "string", "minLength": 2, "maxLength": 4},
        {"type": "string", "pattern": "^[a-z]+[0-9]*$"},
        {"type": "integer", "minimum": 0, "maximum": 10},
        {"type": "number", "exclusiveMinimum": 0},
        {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"const": 1},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "date"},
    ]
)
DRAFTS = [None, "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#"]
tool_schemas = st.builds(
    lambda props, required, closed, draft: {
        "type": "object",
        "properties": props,
        "required": sorted(required & set(props)),
        **({"additionalProperties": False} if closed else {}),
        **({"$schema": draft} if draft else {}),
    },
    st.dictionaries(st.sampled_from(["id", "path", "n", "tags"]), scalar_schemas, max_size=3),
    st.sets(st.sampled_from(["id", "path", "n", "tags"])),
    st.booleans(),
    st.sampled_from(DRAFTS),
)
argument_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-2, 12, allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4),
    max_leaves=6,
)
tool_arguments = st.dictionaries(st.sampled_from(["id", "path", "n", "tags", "extra"]), argument_values, max_size=4)


@settings(max_examples=400, deadline=None)
@given(schema=tool_schemas, args=tool_arguments)
def test_validation_agrees_with_the_jsonschema_package(schema: dict[str, Any], args: dict[str, Any]) -> None:
    # The fast validator must accept exactly what the reference implementation accepts.
    reference = jsonschema.validators.validator_for(schema)(schema).is_valid(args)
    try:
        validate_args(args, schema)
        accepted = True
    except InvalidArgumentsError:
        accepted = False
    assert accepted is reference

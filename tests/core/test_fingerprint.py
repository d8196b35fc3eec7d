"""The canonical form and fingerprint, as documented in crossgate.fingerprint."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crossgate import InvalidArgumentsError, canonical_json, fingerprint, parse_args
from crossgate.audit import seal, sealed_hash
from crossgate.fingerprint import same_json
from crossgate.model import Event, NewEvent

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
        ({"é": "ü ✓"}, '{"é":"ü ✓"}'),
        ({"x": 1.0}, '{"x":1}'),
        ({"x": 0.1}, '{"x":0.1}'),
        ({"x": 1e-7}, '{"x":1e-07}'),
        ({"x": True, "y": None}, '{"x":true,"y":null}'),
        ({"nested": {"z": 1, "a": {"d": 2, "c": 3}}}, '{"nested":{"a":{"c":3,"d":2},"z":1}}'),
    ],
)
def test_canonical_form(value: object, text: str) -> None:
    assert canonical_json(value) == text


def test_key_order_and_integral_floats_do_not_change_the_fingerprint() -> None:
    assert fingerprint("t", {"a": 1, "b": 2.0}) == fingerprint("t", {"b": 2, "a": 1})


def test_tool_args_and_unicode_form_all_change_the_fingerprint() -> None:
    base = fingerprint("delete_ticket", {"id": "t3"})
    assert base != fingerprint("delete_ticket", {"id": "t1"})
    assert base != fingerprint("close_ticket", {"id": "t3"})
    assert fingerprint("t", {"name": "\u00e9"}) != fingerprint("t", {"name": "e\u0301"})
    assert fingerprint("t", {"flag": True}) != fingerprint("t", {"flag": 1})


@pytest.mark.parametrize("bad", [{"x": math.nan}, {"x": math.inf}, {"x": object()}, {1: "int key"}])
def test_values_that_are_not_json_are_refused(bad: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidArgumentsError):
        canonical_json(bad)


@pytest.mark.parametrize("raw", ['{"id": "t3"', '["t3"]', "", "   ", '"t3"', "null", '{"x": NaN}', '{"x": Infinity}'])
def test_parse_args_refuses_what_is_not_a_json_object(raw: str) -> None:
    with pytest.raises(InvalidArgumentsError):
        parse_args(raw)


def test_parse_args_accepts_objects_from_text_bytes_and_mappings() -> None:
    assert parse_args('{"id": "t3"}') == {"id": "t3"}
    assert parse_args(b'{"id": "t3"}') == {"id": "t3"}
    assert parse_args({"id": "t3"}) == {"id": "t3"}


@given(json_values)
def test_canonical_json_round_trips_to_the_same_canonical_text(value: object) -> None:
    import json

    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


optional_text = st.none() | st.text()
EVENT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "seq": st.integers(min_value=1, max_value=2**62),
    "at": st.datetimes(timezones=st.timezones()),
    "kind": st.text(),
    "request_id": optional_text,
    "actor": optional_text,
    "payload": st.dictionaries(st.text(max_size=5), json_values, max_size=4),
}
"""Strategies for the fields of an audit event (the chain's input)."""


@given(
    **EVENT_FIELDS,
    run=optional_text,
    channel=optional_text,
    prev_hash=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)
def test_the_chained_text_of_an_event_is_the_canonical_json_of_its_fields(**fields: object) -> None:
    # Events are sealed over text assembled field by field; it must be exactly the documented form.
    expected = canonical_json({**fields, "at": fields["at"].isoformat()})  # type: ignore[attr-defined]
    assert Event(**fields, hash="").chained_text() == expected


def test_seal_hashes_the_chained_text_and_keeps_every_field() -> None:
    new = NewEvent(kind="decided", at=datetime(2026, 1, 2, tzinfo=UTC), request_id="req_é", payload={"n": 1.0})
    event = seal(new, seq=7, prev_hash="a" * 64)
    assert event == Event(**new.model_dump(), seq=7, prev_hash="a" * 64, hash=event.hash)
    assert event.hash == hashlib.sha256(event.chained_text().encode()).hexdigest()
    assert '"payload":{"n":1}' in event.chained_text()


@given(**EVENT_FIELDS)
def test_sealed_hash_is_the_hash_seal_gives(seq: int, at: datetime, **fields: Any) -> None:
    # A store sealing a batch hashes NewEvents without building Events: the same hash, or the chain breaks.
    new = NewEvent(at=at, **fields)
    expected = seal(new, seq=seq, prev_hash="b" * 64).hash
    assert sealed_hash(new, seq=seq, at=at.isoformat(), prev_hash="b" * 64) == expected


@given(json_values, json_values)
def test_values_same_json_calls_the_same_have_the_same_canonical_form(a: object, b: object) -> None:
    if same_json(a, b):
        assert canonical_json(a) == canonical_json(b)


@given(json_values)
def test_a_value_parsed_twice_from_its_text_is_the_same_json(value: object) -> None:
    text = canonical_json({"v": value})
    assert same_json(parse_args(text), parse_args(text))


@pytest.mark.parametrize(
    ("a", "b"),
    [({"x": True}, {"x": 1}), ({"x": 1}, {"x": "1"}), ({"x": [1, 2]}, {"x": [2, 1]}), ({"x": 1}, {"x": 1, "y": 2})],
)
def test_same_json_tells_apart_what_equality_may_not(a: object, b: object) -> None:
    assert not same_json(a, b)

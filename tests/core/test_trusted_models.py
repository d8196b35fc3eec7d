"""``crossgate.model.trusted``: the fast constructor of the models built on every tool call."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from crossgate.audit import GENESIS_HASH, seal, verify_chain
from crossgate.model import Event, NewEvent, trusted

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def event_values() -> dict[str, object]:
    return {
        "seq": 1,
        "at": AT,
        "kind": "auto_allowed",
        "request_id": None,
        "run": "run-1",
        "actor": "policy",
        "channel": "policy",
        "payload": {"tool": "read_ticket", "args": {"id": "t1"}},
        "prev_hash": GENESIS_HASH,
        "hash": "0" * 64,
    }


def test_a_trusted_instance_is_what_model_construct_gives() -> None:
    built = trusted(Event, event_values())
    reference = Event.model_construct(**event_values())  # type: ignore[arg-type]
    assert built == reference
    assert built.model_dump() == reference.model_dump()
    assert built.model_fields_set == reference.model_fields_set
    assert built.__pydantic_extra__ is None and built.__pydantic_private__ is None


def test_a_trusted_instance_stays_frozen() -> None:
    built = trusted(Event, event_values())
    with pytest.raises(ValidationError):
        built.seq = 2  # type: ignore[misc]


def test_values_that_are_not_exactly_the_fields_fall_back_to_model_construct() -> None:
    values = event_values()
    del values["request_id"]
    values["unknown"] = "dropped"
    built = trusted(Event, values)
    assert built.request_id is None  # the default, filled in
    assert "unknown" not in built.__dict__


def test_sealed_events_chain_and_verify() -> None:
    prev, events = GENESIS_HASH, []
    for seq in range(1, 4):
        new = NewEvent(kind="ran", at=AT, run="run-1", payload={"ran": True, "seq": seq})
        event = seal(new, seq=seq, prev_hash=prev)
        events.append(event)
        prev = event.hash
    assert verify_chain(events, (3, prev)).ok
    rehashed = Event.model_validate({**events[1].model_dump(), "hash": "f" * 64})
    assert not verify_chain([events[0], rehashed, events[2]], (3, prev)).ok

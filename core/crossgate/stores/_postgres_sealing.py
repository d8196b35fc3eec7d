"""Sealing in PostgreSQL (migration 011): the parameters of ``crossgate_seal`` and its kin, and the Events
their rows describe.

The database locks the chain head, fills in each event's seq and previous hash, and hashes it, so the head
is held only while the server works. The hash is :func:`crossgate.audit.seal`'s, byte for byte: the store
sends the event's canonical text without its two chain values (:func:`crossgate.model.chained_parts`) and
the event's JSON without them, and the function puts them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossgate.errors import AuditHeadMissingError
from crossgate.model import Event, NewEvent, chained_parts, trusted


def seal_params(events: Sequence[NewEvent], channel: str) -> dict[str, Any]:
    """The ``p_before`` .. ``p_channel`` arguments of the sealing functions for ``events``, in order."""
    before: list[str] = []
    between: list[str] = []
    for new in events:
        head, middle = chained_parts(new, at=new.at.isoformat())
        before.append(head)
        between.append(middle)
    return {
        "before": before,
        "between": between,
        "bodies": [new.model_dump_json() for new in events],
        "ats": [new.at for new in events],
        "kinds": [new.kind for new in events],
        "request_ids": [new.request_id for new in events],
        "channel": channel,
    }


def sealed(new: NewEvent, seq: int, prev_hash: str, digest: str) -> Event:
    """The Event ``new`` became at ``seq`` after ``prev_hash`` with hash ``digest`` (a row the database sealed)."""
    values = {
        "seq": int(seq),
        "at": new.at,
        "kind": new.kind,
        "request_id": new.request_id,
        "run": new.run,
        "actor": new.actor,
        "channel": new.channel,
        "payload": new.payload,
        "prev_hash": str(prev_hash),
        "hash": str(digest),
    }
    return trusted(Event, values)


def sealed_all(events: Sequence[NewEvent], rows: Sequence[Sequence[Any]]) -> list[Event]:
    """``events`` as the rows of ``crossgate_seal`` sealed them; AuditHeadMissingError when it sealed none
    (the function finds no head)."""
    if len(rows) != len(events):
        raise AuditHeadMissingError()
    return [sealed(new, *row) for new, row in zip(events, rows, strict=True)]

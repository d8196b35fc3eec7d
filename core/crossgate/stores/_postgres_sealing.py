"""Sealing in PostgreSQL (migrations 011, 013): the parameters of ``crossgate_seal`` and its kin, and the
Events their rows describe.

The database locks each event's partition's head, fills in the event's seq and previous hash, and hashes
it, so a head is held only while the server works. The hash is :func:`crossgate.audit.seal`'s, byte for byte: the store
sends the event's canonical text without its two chain values (:func:`crossgate.model.chained_parts`) and
the event's JSON without them, and the function puts them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossgate.errors import AuditHeadMissingError
from crossgate.model import Event, NewEvent, chained_parts, trusted
from crossgate.stores._partitions import partition_of


def seal_params(events: Sequence[NewEvent], partitions: int) -> dict[str, Any]:
    """The ``p_partitions`` .. ``p_request_ids`` arguments of the sealing functions for ``events``, in order,
    among ``partitions`` chains."""
    before: list[str] = []
    between: list[str] = []
    for new in events:
        head, middle = chained_parts(new, at=new.at.isoformat())
        before.append(head)
        between.append(middle)
    return {
        "partitions": [partition_of(new, partitions) for new in events],
        "before": before,
        "between": between,
        "bodies": [new.model_dump_json() for new in events],
        "ats": [new.at for new in events],
        "kinds": [new.kind for new in events],
        "request_ids": [new.request_id for new in events],
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

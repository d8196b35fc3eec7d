"""Which of a PostgreSQL store's N audit chains (partitions) an event joins (migration 013).

Keyed by the event's run, so one run's events form one chain and different runs' writes lock different
heads. Partition 0 takes the events without a run, and every standing-rule and policy-version event
whatever its run: those writes lock partition 0's head (``audit_head``, which holds the rules version) anyway.
"""

from __future__ import annotations

import hashlib

from crossgate.model import EventKind, NewEvent

DEFAULT_PARTITIONS = 1
"""N for a fresh PostgreSQL schema, unless the store is given ``partitions=`` (``?partitions=8``). One chain by
default: with N > 1 writes of different runs stop waiting on one head, but request pages by cursor are no
longer in commit order (a request that commits late can sort before a cursor already handed out), and on
two cores the throughput did not move (docs/benchmarks.md); so several chains are an operator's choice."""
MAX_PARTITIONS = 1024
_ZERO_KINDS = frozenset({EventKind.RULE_ADDED.value, EventKind.RULE_REVOKED.value, "policy_applied"})


def partition_of(event: NewEvent, partitions: int) -> int:
    """The partition of ``event`` among ``partitions``: sha256 of its run, mod N; 0 without a run."""
    if partitions <= 1 or event.run is None or event.kind in _ZERO_KINDS or event.kind.startswith("credential"):
        return 0
    return int.from_bytes(hashlib.sha256(event.run.encode("utf-8")).digest()[:8], "big") % partitions

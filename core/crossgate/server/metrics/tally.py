"""``EventTally``: the audit log folded into the counts ``/metrics`` reports.

Every server reads the same log from its start, so every server on one store reports the same counts,
whichever of them recorded the change. The tally reads only the events after the last one it folded,
and keeps a submission time only while its request is pending.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from crossgate.model import Event, EventKind
from crossgate.queue import REFUSED_MESSAGE
from crossgate.stores.base import Store

DECISION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0)
"""Upper bounds, in seconds, of the time-to-decision histogram: from a click to a day."""
READ_BATCH = 1000
POLICY_REFUSAL = "policy"
LIMITS_REFUSAL = "input_limits"
_LIMITS_PREFIX = REFUSED_MESSAGE.split("{", 1)[0]


@dataclass(slots=True)
class DecisionTimes:
    """A histogram of seconds from submission to decision: counts per bucket (not cumulative), and the sum."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(DECISION_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, seconds: float) -> None:
        """Count one decision that took ``seconds``."""
        index = next((i for i, bound in enumerate(DECISION_BUCKETS) if seconds <= bound), len(DECISION_BUCKETS))
        self.buckets[index] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as Prometheus wants them, ending with ``+Inf``."""
        pairs, running = [], 0
        for bound, count in zip((*DECISION_BUCKETS, float("inf")), self.buckets, strict=True):
            running += count
            pairs.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return pairs


class EventTally:
    """Counts of submissions, decisions, expiries and refusals, and decision times, from the log."""

    def __init__(self) -> None:
        self.seq = 0
        self.submitted: Counter[tuple[str, ...]] = Counter()
        """By framework and tool."""
        self.decisions: Counter[tuple[str, ...]] = Counter()
        """By decision kind and channel."""
        self.expired: Counter[str] = Counter()
        """By framework."""
        self.refusals: Counter[str] = Counter()
        """By reason: ``policy``, ``input_limits``, or a gate's refusal (``unsigned``, ``binding``, ``lapsed``...)."""
        self.decision_times: dict[str, DecisionTimes] = {}
        """By framework."""
        self._opened: dict[str, tuple[str, datetime]] = {}

    def read(self, store: Store) -> None:
        """Fold in every event logged since the last read."""
        while True:
            events = store.list_events(after=self.seq, limit=READ_BATCH)
            for event in events:
                self.fold(event)
            if len(events) < READ_BATCH:
                return

    def fold(self, event: Event) -> None:
        """Count one event."""
        self.seq = max(self.seq, event.seq)
        kind, payload = event.kind, event.payload
        framework = str(payload.get("framework") or event.channel or "")
        if kind == EventKind.SUBMITTED and event.request_id is not None:
            self.submitted[(framework, str(payload.get("tool") or ""))] += 1
            self._opened[event.request_id] = (framework, event.at)
        elif kind == EventKind.DECIDED and event.request_id is not None:
            self.decisions[(str(payload.get("kind") or ""), event.channel or "")] += 1
            if (opened := self._opened.pop(event.request_id, None)) is not None:
                seconds = max(0.0, (event.at - opened[1]).total_seconds())
                self.decision_times.setdefault(opened[0], DecisionTimes()).observe(seconds)
        elif kind in (EventKind.EXPIRED, EventKind.CANCELLED) and event.request_id is not None:
            opened = self._opened.pop(event.request_id, None)
            if kind == EventKind.EXPIRED:
                self.expired[opened[0] if opened else ""] += 1
            if isinstance(refused := payload.get("refused"), str):
                self.refusals[refused] += 1
        elif kind == EventKind.AUTO_DENIED:
            limits = payload.get("rule") is None and str(payload.get("reason") or "").startswith(_LIMITS_PREFIX)
            self.refusals[LIMITS_REFUSAL if limits else POLICY_REFUSAL] += 1
        elif kind == "refused" and isinstance(refused := payload.get("refused"), str):
            self.refusals[refused] += 1

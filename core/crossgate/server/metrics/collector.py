"""``StoreCollector``: what ``/metrics`` reads from the store at scrape time, cached for a few seconds.

Pending requests and parked runs are read from the store; counts and decision times come from the log
(:class:`~crossgate.server.metrics.tally.EventTally`). So every server on one store reports the same
values, and a scrape within ``cache_seconds`` of the last one reads nothing.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from crossgate.model import ParkedRunStatus
from crossgate.queue import ReviewQueue
from crossgate.server.metrics.tally import EventTally

CACHE_SECONDS = 5.0


class StoreCollector(Collector):
    """The queue's state as Prometheus metrics."""

    def __init__(self, queue: ReviewQueue, *, cache_seconds: float = CACHE_SECONDS) -> None:
        self._queue = queue
        self._cache_seconds = cache_seconds
        self._tally = EventTally()
        self._lock = threading.Lock()
        self._cached: tuple[float, list[Metric]] | None = None

    def collect(self) -> Iterable[Metric]:
        """The metrics, read again once the cache is older than ``cache_seconds``."""
        with self._lock:
            cached = self._cached
            if cached is None or time.monotonic() - cached[0] >= self._cache_seconds:
                cached = self._cached = (time.monotonic(), list(self._read()))
            return list(cached[1])

    def _read(self) -> Iterator[Metric]:
        queue = self._queue
        self._tally.read(queue.store)
        tally = self._tally
        pending = Counter((r.call.framework, r.call.tool) for r in queue.pending())
        gauge = GaugeMetricFamily(
            "crossgate_requests_pending", "Requests waiting for a reviewer.", labels=["framework", "tool"]
        )
        for (framework, tool), count in sorted(pending.items()):
            gauge.add_metric([framework, tool], count)
        yield gauge
        yield _counter(
            "crossgate_requests_submitted", "Requests made (ask verdicts).", ["framework", "tool"], tally.submitted
        )
        yield _counter("crossgate_decisions", "Decisions recorded.", ["kind", "channel"], tally.decisions)
        yield _counter("crossgate_requests_expired", "Requests that expired.", ["framework"], _by_one(tally.expired))
        yield _counter(
            "crossgate_refusals",
            "Calls refused without a reviewer: by the policy, the input limits, or a gate's verification.",
            ["reason"],
            _by_one(tally.refusals),
        )
        times = HistogramMetricFamily(
            "crossgate_time_to_decision_seconds", "Seconds from a request to its decision.", labels=["framework"]
        )
        for framework, histogram in sorted(tally.decision_times.items()):
            times.add_metric([framework], histogram.cumulative(), histogram.total)
        yield times
        parked = Counter(run.status for run in queue.store.list_parked_runs())
        runs = GaugeMetricFamily("crossgate_parked_runs", "Parked runs by status.", labels=["status"])
        for status in ParkedRunStatus:
            runs.add_metric([status.value], parked.get(status, 0))
        yield runs


def _counter(name: str, documentation: str, labels: list[str], counts: Mapping[tuple[str, ...], int]) -> Metric:
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, count in sorted(counts.items()):
        family.add_metric(list(key), count)
    return family


def _by_one(counts: Counter[str]) -> dict[tuple[str, ...], int]:
    return {(key,): count for key, count in counts.items()}

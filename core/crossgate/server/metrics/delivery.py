"""``DeliveryMetrics``: how this server's notification channels keep up, by target kind.

A target is delivered by one server at a time (it holds the target's lease), so these are each server's
own counts: summed over servers, they are the whole. ``target_kind`` is the channel's kind (``webhook``
for crossgate's JSON, ``slack`` for a Slack-format webhook or a Slack app); a new channel records under
its own kind through the same three calls.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LAG_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
"""Seconds from the event being logged to its notification being accepted."""


class DeliveryMetrics:
    """Deliveries, give-ups and the lag of each delivery, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._delivered = Counter(
            "crossgate_deliveries", "Notifications a target accepted.", ["target_kind"], registry=registry
        )
        self._failed = Counter(
            "crossgate_delivery_failures",
            "Notifications given up on after every attempt failed.",
            ["target_kind"],
            registry=registry,
        )
        self._attempts = Counter(
            "crossgate_delivery_attempts", "Attempts to deliver a notification.", ["target_kind"], registry=registry
        )
        self._lag = Histogram(
            "crossgate_delivery_lag_seconds",
            "Seconds from an event being logged to a target accepting its notification.",
            ["target_kind"],
            buckets=LAG_BUCKETS,
            registry=registry,
        )

    def attempted(self, target_kind: str) -> None:
        """One attempt was made."""
        self._attempts.labels(target_kind).inc()

    def delivered(self, target_kind: str, lag_seconds: float) -> None:
        """A target accepted a notification ``lag_seconds`` after its event was logged."""
        self._delivered.labels(target_kind).inc()
        self._lag.labels(target_kind).observe(max(0.0, lag_seconds))

    def failed(self, target_kind: str) -> None:
        """A notification was given up on."""
        self._failed.labels(target_kind).inc()

"""``GET /metrics``: the queue and its notifications in Prometheus text format (``prometheus_client``).

Counts come from the store (:mod:`.collector`), so every server on one store reports the same; delivery
metrics are each server's own (:mod:`.delivery`). Access: a bearer metrics token when one is configured,
else loopback clients only (:mod:`.route`).
"""

from crossgate.server.metrics.delivery import DeliveryMetrics
from crossgate.server.metrics.route import Metrics, router

__all__ = ["DeliveryMetrics", "Metrics", "router"]

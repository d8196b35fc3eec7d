"""Where reviewers decide besides the page: channels that follow the event log (Slack, e-mail, Teams).

Each channel is a view over the durable request, never the record itself: it reads the log after the
queue has stored a change, through its own delivery cursor, so a channel that is down leaves the
request pending and catches up from its cursor once it is back.
"""

from __future__ import annotations

from typing import Protocol


class Channel(Protocol):
    """A channel the server runs beside the webhooks (the Slack app, the e-mail notifier)."""

    async def start(self) -> None:
        """Start following the event log."""

    async def stop(self) -> None:
        """Stop, letting a delivery under way finish."""

    def stats(self) -> dict[str, dict[str, int]]:
        """Counters per follower of the log (delivered, retries, failed), for ``GET /api/health``."""

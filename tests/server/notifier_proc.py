"""A review server's lifespan (change feed and notifier, no HTTP) in its own process, for crash tests.

``python -m tests.server.notifier_proc DB WEBHOOK_URL LEASE_SECONDS`` runs until killed; the parent kills
it with SIGKILL, so nothing is released and nothing is cleaned up, as in a real crash.
"""

from __future__ import annotations

import asyncio
import sys

from crossgate import ReviewQueue, open_store
from crossgate.server.app import create_app
from crossgate.server.settings import WebhookTarget
from tests.server.conftest import POLICY, make_settings


async def serve(db: str, url: str, lease: float) -> None:
    queue = ReviewQueue(open_store(db), POLICY)
    settings = make_settings(
        webhooks=(WebhookTarget(url=url),),
        webhook_lease_seconds=lease,
        webhook_timeout_seconds=60.0,
        webhook_attempts=3,
        webhook_backoff_seconds=0.05,
    )
    app = create_app(queue, settings)
    async with app.router.lifespan_context(app):
        print("serving", flush=True)
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2], float(sys.argv[3])))
